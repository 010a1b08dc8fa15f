package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/testenv"
)

// statusOf is docs/protocol.md §9, written out again so that this test checks the
// mapping as well as the rule.
var statusOf = map[core.Reason]int{
	"": 200, core.ReasonThreadClosed: 409, core.ReasonInvalidTransition: 409,
	core.ReasonThreadAuthorityMissing: 403, core.ReasonTokenRightMissing: 403,
}

// confirmation is how a thread's state came to be: a proposal, or
// confirmed by no authority (a thread's first open), by a lock holder or by
// the human.
type confirmation struct {
	name string
	cur  func(core.State) core.Current
}

var confirmations = []confirmation{
	{"proposal", func(s core.State) core.Current { return core.Current{State: s} }},
	{"confirmed-by-none", func(s core.State) core.Current { return core.Current{State: s, Confirmed: true} }},
	{"confirmed-by-lock", func(s core.State) core.Current { return core.Current{State: s, Confirmed: true, By: core.ByLock} }},
	{"confirmed-by-human", func(s core.State) core.Current { return core.Current{State: s, Confirmed: true, By: core.ByHuman} }},
}

// paths are the marks that reach a state from open by the step rule.
var paths = map[core.State][]string{
	core.StateAnswered: {"answered"}, core.StateDecided: {"decided"}, core.StateClosed: {"answered", "closed"},
	core.StateDeferred: {"deferred"}, core.StateObsolete: {"obsolete"}, core.StateRejected: {"rejected"},
}

// setState brings a new thread of alice's into a state the way it is
// confirmed: proposals by alice (the creator), lock confirmations by the
// moderator's marks, human ones by the human's re-mark. It reports false
// when no one reaches that combination (a first open is the only state
// confirmed by no authority).
func (w *world) setState(st core.State, cf confirmation) (string, bool) {
	w.t.Helper()
	th, _ := w.ask(w.cast.Alice, "q")
	by := cf.cur(st)
	switch {
	case st == core.StateOpen && by.Confirmed && by.By == core.ByNone:
		return th, true
	case st == core.StateOpen && !by.Confirmed, by.Confirmed && by.By == core.ByNone:
		return "", false
	case by.By == core.ByHuman:
		if r := w.mark(w.cast.Human, th, string(st)); r.status != 200 {
			w.t.Fatalf("human mark %s: %s", st, r.raw)
		}
		return th, true
	case by.By == core.ByLock:
		if st == core.StateOpen {
			return "", false // a lock holder does not mark open
		}
		for _, s := range paths[st] {
			if r := w.mark(w.cast.Mod, th, s); r.status != 200 || r.body.get("proposal") != false {
				w.t.Fatalf("lock mark %s: %s", s, r.raw)
			}
		}
		return th, true
	}
	for _, s := range paths[st] {
		if r := w.mark(w.cast.Alice, th, s); r.status != 200 || r.body.get("proposal") != true {
			w.t.Fatalf("creator mark %s: %s", s, r.raw)
		}
	}
	return th, true
}

// TestMarkEveryTransition drives the mark operation over HTTP for every
// state × who confirmed it (proposal, no authority, lock holder, human) ×
// every target × creator, plain writer, lock holder, human and reader, and
// checks status, reason, the stored state, its origin and confirmation,
// and the event the change appended. The expected answer is the rule's
// (core.Decide, itself checked against a hand-written table in core).
func TestMarkEveryTransition(t *testing.T) {
	roles := []struct {
		name  string
		token func(testenv.Cast) string
		role  core.Role
		read  bool // read-only: refused before authority
	}{
		{"writer", func(c testenv.Cast) string { return c.Bob }, core.RoleWriter, false},
		{"creator", func(c testenv.Cast) string { return c.Alice }, core.RoleCreator, false},
		{"lock", func(c testenv.Cast) string { return c.Mod }, core.RoleLock, false},
		{"human", func(c testenv.Cast) string { return c.Human }, core.RoleHuman, false},
		{"reader", func(c testenv.Cast) string { return c.Reader }, core.RoleWriter, true},
	}
	for _, from := range core.AllStates {
		for _, cf := range confirmations {
			// One backend per starting state keeps each one small.
			w := newWorldOn(t, testenv.Embedded, core.Options{}) // a heavy matrix: embedded
			c := w.cast
			if _, ok := w.setState(from, cf); !ok {
				continue
			}
			for _, to := range core.AllStates {
				for _, r := range roles {
					name := fmt.Sprintf("%s/%s→%s/%s", from, cf.name, to, r.name)
					t.Run(name, func(t *testing.T) {
						th, _ := w.setState(from, cf)
						before := w.thread(th)
						res := w.mark(r.token(c), th, string(to))
						_, rule := core.Decide(r.role, cf.cur(from), core.OpMark, to)
						want := reasonOf(rule)
						switch {
						case r.read:
							want = core.ReasonTokenRightMissing
						case to == core.StateOpen && r.role != core.RoleHuman:
							want = core.ReasonInvalidBody // open is reached by reopen
						}
						wantStatus := statusOf[want]
						if want == core.ReasonInvalidBody {
							wantStatus = 400
						}
						if res.status != wantStatus || core.Reason(res.reason()) != want {
							t.Fatalf("status %d reason %q, want %d %q: %s", res.status, res.reason(), wantStatus, want, res.raw)
						}
						after := w.thread(th)
						evs := w.do("GET", "/v1/events?thread="+th, c.Human, nil).body.list("events")
						if want != "" {
							if after.num("version") != before.num("version") || after.str("state") != before.str("state") {
								t.Fatalf("a refused mark changed the thread: %v → %v", before, after)
							}
							return
						}
						wantConfirmed := r.role >= core.RoleLock
						if after.str("state") != string(to) || (after.get("proposal") == true) == wantConfirmed {
							t.Fatalf("stored %s proposal=%v, want %s confirmed=%v", after.str("state"), after.get("proposal"), to, wantConfirmed)
						}
						wantOrigin, wantLabel := "llm", ""
						if r.role == core.RoleHuman {
							wantOrigin = "user"
						}
						if r.role == core.RoleLock {
							wantLabel = "KI · mod"
						}
						if after.str("state_origin") != wantOrigin || after.str("state_label") != wantLabel {
							t.Fatalf("origin %q label %q, want %q %q", after.str("state_origin"), after.str("state_label"), wantOrigin, wantLabel)
						}
						last := obj(evs[len(evs)-1].(map[string]any))
						if last.str("from") != string(from) || last.str("to") != string(to) || last.get("confirmed") != wantConfirmed ||
							last.str("cause") != "mark" || last.str("origin") != wantOrigin || last.str("label") != wantLabel {
							t.Fatalf("last event %v", last)
						}
					})
				}
			}
		}
	}
}

func reasonOf(err error) core.Reason {
	if err == nil {
		return ""
	}
	return core.AsRefusal(err).Reason
}

// TestProposalAndConfirmation: a model's mark is a proposal until a lock
// holder or a human confirms it; confirm leaves the state as it stands.
func TestProposalAndConfirmation(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, _ := w.ask(c.Alice, "q")
	if r := w.mark(c.Alice, th, "decided"); r.status != 200 || r.body.get("proposal") != true || r.body.get("state_confirmed_at") != nil {
		t.Fatalf("creator's mark: %s", r.raw)
	}
	for _, tok := range []string{c.Alice, c.Bob} {
		if r := w.do("POST", "/v1/threads/"+th+"/confirm", tok, `{"state":"decided"}`); r.status != 403 || r.reason() != "thread_authority_missing" {
			t.Fatalf("confirm by a model without lock: %s", r.raw)
		}
	}
	if r := w.do("POST", "/v1/threads/"+th+"/confirm", c.Mod, `{"state":"answered"}`); r.status != 409 || r.reason() != "invalid_transition" {
		t.Fatalf("confirming a state the proposal no longer has: %s", r.raw)
	}
	r := w.do("POST", "/v1/threads/"+th+"/confirm", c.Mod, `{"state":"decided"}`)
	if r.status != 200 || r.body.str("state") != "decided" || r.body.get("proposal") != false || r.body.str("state_label") != "KI · mod" {
		t.Fatalf("confirm by lock: %s", r.raw)
	}
	if r := w.do("POST", "/v1/threads/"+th+"/confirm", c.Human, `{"state":"decided"}`); r.status != 409 || r.reason() != "invalid_transition" {
		t.Fatalf("confirming a confirmed state: %s", r.raw)
	}
	// A model's proposal never replaces a confirmed state (docs/protocol.md §5.4).
	if r := w.mark(c.Alice, th, "closed"); r.status != 403 || r.reason() != "thread_authority_missing" || r.body.str("error.detail.confirmed_by") != "lock" {
		t.Fatalf("the creator's proposal over a lock holder's confirmation: %s", r.raw)
	}
	// A proposed closed locks nothing: messages and marks still go through.
	other, _ := w.ask(c.Alice, "another")
	w.mark(c.Alice, other, "decided")
	w.mark(c.Alice, other, "closed")
	w.post(c.Bob, map[string]any{"kind": "inform", "thread": other, "body": "still open for talk"}, 201)
	if r := w.mark(c.Alice, other, "deferred"); r.status != 200 {
		t.Fatalf("side state from a proposed closed: %s", r.raw)
	}
	evs := w.do("GET", "/v1/events?thread="+th, c.Alice, nil).body.list("events")
	want := []string{"-→open", "open→decided", "decided→decided"}
	if len(evs) != len(want) {
		t.Fatalf("events %v", evs)
	}
	for i, e := range evs {
		ev := obj(e.(map[string]any))
		from := ev.str("from")
		if from == "" {
			from = "-"
		}
		if got := from + "→" + ev.str("to"); got != want[i] {
			t.Fatalf("event %d = %s, want %s", i, got, want[i])
		}
	}
	if obj(evs[2].(map[string]any)).str("cause") != "confirm" || obj(evs[2].(map[string]any)).get("confirmed") != true {
		t.Fatalf("confirm event: %v", evs[2])
	}
}

// TestConfirmedClosedRefusesEveryone, and only reopen moves it.
func TestConfirmedClosedRefusesEveryone(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, root := w.ask(c.Alice, "q")
	w.post(c.Bob, map[string]any{"kind": "answer", "thread": th, "body": "a"}, 201)
	if r := w.mark(c.Mod, th, "closed"); r.status != 200 || r.body.get("proposal") != false || r.body.get("awaiting") != nil {
		t.Fatalf("lock closes (confirmed, awaiting cleared): %s", r.raw)
	}
	for name, tok := range map[string]string{"creator": c.Alice, "writer": c.Bob, "lock": c.Mod, "human": c.Human} {
		t.Run(name, func(t *testing.T) {
			r := w.post(tok, map[string]any{"kind": "inform", "thread": th, "parent": root, "from": map[string]any{"extension": "z"}, "body": "x"}, 409)
			if r.reason() != "thread_closed" {
				t.Fatalf("post: %s", r.raw)
			}
			for _, st := range []string{"decided", "deferred", "answered"} {
				if r := w.mark(tok, th, st); r.status != 409 || r.reason() != "thread_closed" {
					t.Fatalf("mark %s: %s", st, r.raw)
				}
			}
		})
	}
	if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Bob, nil); r.status != 403 || r.reason() != "thread_authority_missing" {
		t.Fatalf("reopen by a plain writer: %s", r.raw)
	}
	// The creator reopens its own thread only when the closed is a
	// proposal; this one a lock holder confirmed (docs/protocol.md §5.4).
	if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Alice, nil); r.status != 403 || r.reason() != "thread_authority_missing" {
		t.Fatalf("creator reopens a lock holder's closed: %s", r.raw)
	}
	r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Mod, nil)
	if r.status != 200 || r.body.str("state") != "open" || r.body.get("proposal") != false {
		t.Fatalf("the lock holder reopens: %s", r.raw)
	}
	if aw := r.body.get("awaiting"); aw == nil || obj(aw.(map[string]any)).str("scope") != "any" || obj(aw.(map[string]any)).str("except.identity") != "ainotes:mod" {
		t.Fatalf("a reopened thread is an open call to everyone but the reopener (protocol §4.2): %s", r.raw)
	}
	w.post(c.Bob, map[string]any{"kind": "inform", "thread": th, "body": "again"}, 201)
	if n := w.thread(th).num("message_count"); n != 3 {
		t.Fatalf("message_count %d", n)
	}
}

func TestReopenRules(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	for _, side := range []string{"deferred", "obsolete", "rejected"} {
		t.Run(side, func(t *testing.T) {
			th, _ := w.ask(c.Alice, "q")
			w.mark(c.Alice, th, side)
			if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Alice, nil); r.status != 403 || r.reason() != "thread_authority_missing" {
				t.Fatalf("creator reopens a side state: %s", r.raw)
			}
			if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Mod, nil); r.status != 200 || r.body.str("state") != "open" || r.body.get("proposal") != false {
				t.Fatalf("lock reopens: %s", r.raw)
			}
		})
	}
	th, _ := w.ask(c.Bob, "q")
	if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Human, nil); r.status != 409 || r.reason() != "invalid_transition" {
		t.Fatalf("reopening an open thread: %s", r.raw)
	}
	w.mark(c.Human, th, "closed")
	if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Alice, nil); r.status != 403 {
		t.Fatalf("reopen of a foreign closed thread by a writer: %s", r.raw)
	}
	if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Human, nil); r.status != 200 || r.body.str("state_origin") != "user" {
		t.Fatalf("human reopens: %s", r.raw)
	}
	if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Reader, nil); r.status != 403 || r.reason() != "token_right_missing" {
		t.Fatalf("reader reopens: %s", r.raw)
	}
}
