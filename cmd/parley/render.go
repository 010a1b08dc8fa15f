package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ainotes/parley/core"
)

// Human-readable output: a thread as an indented tree, lists as aligned
// tables. --json bypasses all of this and prints the API's JSON.

// clean makes server text safe for a terminal: control characters other
// than newline and tab are shown as U+FFFD.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)) {
			return utf8.RuneError
		}
		return r
	}, s)
}

// oneLine shortens text to one line of at most n characters, for tables.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(clean(s)), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// stamp is a time as shown: local, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// partyText is an author: identity, and /extension when there is one.
func partyText(p core.Party) string {
	if p.Extension != "" {
		return p.Identity + "/" + p.Extension
	}
	return p.Identity
}

// awaitingText says who is due.
func awaitingText(a *core.AwaitingView) string {
	if a == nil {
		return "nobody"
	}
	switch a.Scope {
	case core.AwaitParty:
		p := core.Party{Identity: a.Identity}
		if a.Extension != nil {
			p.Extension = *a.Extension
		}
		return partyText(p)
	case core.AwaitAny:
		if a.Except != nil {
			return "anyone but " + partyText(*a.Except)
		}
		return "anyone"
	case core.AwaitHuman:
		return "a human"
	}
	return string(a.Scope)
}

// stateText is a thread's state with who set it, a proposal, a state set
// without a confirmation and a confirmed state told apart: "decided
// (proposal by ainotes:alice)", "open (set by ainotes:alice)", "decided
// (confirmed by ainotes:mod · KI · mod)".
func stateText(s core.ThreadState) string {
	by := s.StateBy
	if s.StateLabel != "" {
		by += " · " + s.StateLabel
	}
	switch {
	case s.Proposal:
		return fmt.Sprintf("%s (proposal by %s)", s.State, by)
	case s.StateConfirmedBy == nil:
		// Not a proposal, yet nobody with authority confirmed it (a
		// thread's opening, or an answer's mark): anyone may move it on.
		return fmt.Sprintf("%s (set by %s)", s.State, by)
	}
	return fmt.Sprintf("%s (confirmed by %s)", s.State, by)
}

// stateShort is the state for a table column.
func stateShort(s core.ThreadState) string {
	if s.Proposal {
		return string(s.State) + " (proposal)"
	}
	if s.StateLabel != "" {
		return string(s.State) + " (" + s.StateLabel + ")"
	}
	return string(s.State)
}

// printState prints the state fields that post, mark, confirm and reopen
// return.
func printState(w io.Writer, s core.ThreadState) {
	fmt.Fprintf(w, "%s  %s\n", s.ID, stateText(s))
	fmt.Fprintf(w, "  awaiting  %s\n", awaitingText(s.Awaiting))
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// printThreads prints thread summaries as a table.
func printThreads(w io.Writer, ts []core.ThreadSummary) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "THREAD\tSTATE\tAWAITING\tMSGS\tUPDATED\tTITLE")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, stateShort(t.ThreadState), awaitingText(t.Awaiting), t.MessageCount, stamp(t.UpdatedAt), oneLine(t.Title, 60))
	}
	return tw.Flush()
}

// printQueue prints the review queue as a table.
func printQueue(w io.Writer, es []core.QueueEntry) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "THREAD\tWHY\tSTATE\tSINCE\tMESSAGE")
	for _, e := range es {
		msg := "-"
		if m := e.Message; m != nil {
			msg = fmt.Sprintf("[%s] %s: %s", m.Kind, partyText(m.From), oneLine(m.Body, 50))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.Why, stateText(e.ThreadState), stamp(e.UpdatedAt), msg)
	}
	return tw.Flush()
}

// eventText is one state change: "open → answered  proposal by ainotes:bob",
// "decided  confirmed by human:hana".
func eventText(e core.EventView) string {
	change := string(e.To) // an opening, or a confirmation of the state as it stands
	if e.From != nil && *e.From != e.To {
		change = fmt.Sprintf("%s → %s", *e.From, e.To)
	}
	how := "proposal by"
	if e.Confirmed {
		how = "confirmed by"
	}
	actor := e.Actor
	if e.Label != "" {
		actor += " · " + e.Label
	}
	return fmt.Sprintf("%s  %s %s", change, how, actor)
}

// eventLine is one event of a feed, for tables and --follow.
func eventLine(e core.EventView) string {
	return fmt.Sprintf("%s  %-8s #%-3d %s  (%s)", stamp(e.At), e.Thread, e.Seq, eventText(e), e.Cause)
}

// printThread prints a thread: its state, who is due, the message tree
// (act badge, author, KI · label where a lock holder's act set the state,
// body, time) and its state history.
func printThread(w io.Writer, t core.ThreadView, events []core.EventView) {
	fmt.Fprintf(w, "%s  %s\n", t.ID, oneLine(t.Title, 100))
	fmt.Fprintf(w, "  state     %s\n", stateText(t.ThreadState))
	fmt.Fprintf(w, "  awaiting  %s\n", awaitingText(t.Awaiting))
	fmt.Fprintf(w, "  creator   %s · %d messages · opened %s\n\n", partyText(t.Creator), t.MessageCount, stamp(t.CreatedAt))
	byCause := map[string]core.EventView{}
	for _, e := range events {
		byCause[e.Cause] = e
	}
	var walk func(ms []*core.MessageView, depth int)
	walk = func(ms []*core.MessageView, depth int) {
		ind := strings.Repeat("    ", depth)
		for _, m := range ms {
			head := fmt.Sprintf("%s[%s] %s", ind, m.Kind, partyText(m.From))
			e, marked := byCause[m.ID]
			if marked && e.Label != "" {
				head += " · " + e.Label
			}
			head += "  " + m.ID + "  " + stamp(m.CreatedAt)
			if marked && e.Seq > 1 {
				how := "proposal"
				if e.Confirmed {
					how = "confirmed"
				}
				head += fmt.Sprintf("  → %s (%s)", e.To, how)
			}
			fmt.Fprintln(w, head)
			for _, line := range strings.Split(clean(m.Body), "\n") {
				fmt.Fprintf(w, "%s  %s\n", ind, line)
			}
			if m.Claim != nil {
				c := "claim " + m.Claim.ID
				if m.Claim.State != "" {
					c += " (" + string(m.Claim.State) + ")"
				}
				if m.Claim.Expired {
					c += " expired"
				}
				fmt.Fprintf(w, "%s  %s\n", ind, c)
			}
			for _, ev := range m.Evidence {
				fmt.Fprintf(w, "%s  evidence: %s\n", ind, evidenceText(ev))
			}
			if len(m.Supersedes) > 0 {
				fmt.Fprintf(w, "%s  supersedes %s\n", ind, strings.Join(m.Supersedes, ", "))
			}
			walk(m.Replies, depth+1)
		}
	}
	walk(t.Messages, 0)
	if len(events) > 0 {
		fmt.Fprintln(w, "\nstate history:")
		for _, e := range events {
			fmt.Fprintf(w, "  %s  %s  (%s)\n", stamp(e.At), eventText(e), e.Cause)
		}
	}
}

func evidenceText(e core.Evidence) string {
	s := clean(e.Kind) + " " + clean(e.Ref)
	if e.Note != "" {
		s += " — " + clean(e.Note)
	}
	return s
}

// printClaims prints claims as a table.
func printClaims(w io.Writer, cs []core.ClaimView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "CLAIM\tSTATE\tTHREAD\tAUTHOR\tUPDATED\tBODY")
	for _, c := range cs {
		state := string(c.State)
		if c.Expired {
			state += " (expired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, state, c.Thread, partyText(c.Author), stamp(c.UpdatedAt), oneLine(c.Body, 60))
	}
	return tw.Flush()
}

// printClaim prints one claim with its evidence and history.
func printClaim(w io.Writer, c core.ClaimView) {
	state := string(c.State)
	if c.Expired {
		state += ", expired"
	}
	fmt.Fprintf(w, "%s  %s\n", c.ID, state)
	for _, line := range strings.Split(clean(c.Body), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "  author    %s · %s in %s · %s\n", partyText(c.Author), c.Message, c.Thread, stamp(c.CreatedAt))
	for _, e := range c.Evidence {
		fmt.Fprintf(w, "  evidence  %s\n", evidenceText(e))
	}
	if c.ValidUntil != nil {
		fmt.Fprintf(w, "  valid to  %s\n", stamp(*c.ValidUntil))
	}
	if len(c.Supersedes) > 0 {
		fmt.Fprintf(w, "  replaces  %s\n", strings.Join(c.Supersedes, ", "))
	}
	if c.SupersededBy != nil {
		fmt.Fprintf(w, "  superseded by %s\n", *c.SupersededBy)
	}
	if len(c.History) > 0 {
		fmt.Fprintln(w, "history:")
		for _, h := range c.History {
			fmt.Fprintf(w, "  %s  [%s] %s  %s → %s  %s\n", stamp(h.At), h.Kind, partyText(h.Actor), h.From, h.To, h.Message)
			for _, e := range h.Evidence {
				fmt.Fprintf(w, "      evidence  %s\n", evidenceText(e))
			}
		}
	}
}

// printTokens prints tokens as the store form of `token list` does.
func printTokens(w io.Writer, ts []core.TokenView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tIDENTITY\tRIGHTS\tLABEL\tCREATED\tREVOKED")
	for _, t := range ts {
		revoked := "-"
		if t.RevokedAt != nil {
			revoked = t.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Identity, joinRights(t.Rights), dash(t.Label), t.CreatedAt.Format(time.RFC3339), revoked)
	}
	return tw.Flush()
}
