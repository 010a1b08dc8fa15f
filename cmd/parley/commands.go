package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/instance"
)

// The client commands: each talks to the HTTP API of the server the user
// logged in to and prints what it got, for people by default and as the
// API's JSON with --json.

var (
	threadRef = regexp.MustCompile(`^th_[1-9][0-9]*$`)
	claimRef  = regexp.MustCompile(`^cl_[1-9][0-9]*$`)
	tokenID   = regexp.MustCompile(`^tk_[0-9a-f]{12}$`)
)

// out writes the API's JSON as it came (one document, newline-terminated).
func (c *cli) out(raw []byte) {
	c.stdout.Write(raw)
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		fmt.Fprintln(c.stdout)
	}
}

// outJSON writes a document the client put together from several pages,
// encoded as the server encodes.
func (c *cli) outJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// begin parses a command's arguments, wanting exactly want positional
// ones (-1: any number; usage says what they are), and makes the client
// of the logged-in server.
func (c *cli) begin(fs *flag.FlagSet, args []string, want int, usage string) ([]string, *api, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if want >= 0 && len(pos) != want {
		return nil, nil, usageErr("%s", usage)
	}
	a, err := c.client(true)
	return pos, a, err
}

// show calls an operation. With --json it prints the answer as is and
// reports done; else the answer is decoded into out for the caller to
// print.
func (c *cli) show(ctx context.Context, a *api, op string, path map[string]string, q url.Values, body, out any) (done bool, err error) {
	raw, err := a.get(ctx, op, path, q, body, out)
	if err != nil {
		return true, err
	}
	if c.json {
		c.out(raw)
		return true, nil
	}
	return false, nil
}

// more prints how to get the next page, if there is one.
func (c *cli) more(cursor *string, command string) {
	if cursor != nil && *cursor != "" {
		fmt.Fprintf(c.stdout, "(more: parley %s --cursor %s)\n", command, *cursor)
	}
}

// --- login, logout, whoami, version, manifest

func cmdLogin(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("login")
	fromStdin := fs.Bool("token-stdin", false, "read the token from standard input (a pipe)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("login takes the server's URL")
	}
	base, err := normalizeURL(pos[0])
	if err != nil {
		return err
	}
	secret, err := c.readToken(ctx, *fromStdin, base)
	if err != nil {
		return err
	}
	a := &api{base: base, token: secret, http: c.http, source: "login"}
	var who core.Whoami
	raw, err := a.get(ctx, "whoami", nil, nil, nil, &who)
	if err != nil {
		return err
	}
	path, err := c.saveConfig(savedLogin{URL: base, Token: secret})
	if err != nil {
		return fmt.Errorf("the token works, but saving it failed: %w", err)
	}
	if u, _ := url.Parse(base); u != nil && u.Scheme == "http" && !loopback(u.Hostname()) {
		fmt.Fprintf(c.stderr, "parley: warning: %s is plain http: the token travels unencrypted\n", base)
	}
	for _, v := range []string{envURL, envToken} {
		if c.getenv(v) != "" {
			fmt.Fprintf(c.stderr, "parley: note: %s is set and takes precedence over the saved login\n", v)
		}
	}
	if c.json {
		c.out(raw)
		return nil
	}
	fmt.Fprintf(c.stdout, "Logged in to %s as %s (rights %s; token %s).\nSaved to %s\n", base, who.Identity, joinRights(who.Rights), who.TokenID, path)
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readToken reads the token: the whole of stdin with --token-stdin, else a
// line, without echo when stdin is a terminal.
func (c *cli) readToken(ctx context.Context, fromStdin bool, base string) (string, error) {
	var secret string
	var err error
	switch f, _ := c.stdin.(*os.File); {
	case fromStdin:
		var b []byte
		b, err = io.ReadAll(io.LimitReader(c.stdin, 64<<10))
		secret = string(b)
	case f != nil && isTerminal(f):
		fmt.Fprintf(c.stderr, "Token for %s: ", base)
		secret, err = readSecret(ctx, f)
		fmt.Fprintln(c.stderr)
	default:
		secret, err = readLineCtx(ctx, c.stdin)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the token: %w", err)
	}
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return "", usageErr("no token given (type it when asked, or pipe it with --token-stdin)")
	}
	return secret, nil
}

func cmdLogout(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("logout")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return cmp.Or(err, usageErr("logout takes no arguments"))
	}
	path, err := c.configPath()
	if err != nil {
		return err
	}
	switch err := os.Remove(path); {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintln(c.stdout, "Not logged in.")
	case err != nil:
		return err
	default:
		fmt.Fprintf(c.stdout, "Logged out: removed %s (the token itself stays valid until revoked).\n", path)
	}
	if c.getenv(envToken) != "" {
		fmt.Fprintf(c.stderr, "parley: note: %s is still set\n", envToken)
	}
	return nil
}

func cmdWhoami(ctx context.Context, c *cli, args []string) error {
	_, a, err := c.begin(c.flags("whoami"), args, 0, "whoami takes no arguments")
	if err != nil {
		return err
	}
	var who core.Whoami
	if done, err := c.show(ctx, a, "whoami", nil, nil, nil, &who); done {
		return err
	}
	fmt.Fprintf(c.stdout, "identity  %s (%s)\n", who.Identity, who.AuthorKind)
	fmt.Fprintf(c.stdout, "rights    %s\n", joinRights(who.Rights))
	if who.Label != "" {
		fmt.Fprintf(c.stdout, "label     %s (marks show KI · %s)\n", who.Label, who.Label)
	}
	fmt.Fprintf(c.stdout, "token     %s\n", who.TokenID)
	fmt.Fprintf(c.stdout, "server    %s\n", a.base)
	return nil
}

func cmdVersion(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("version")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return cmp.Or(err, usageErr("version takes no arguments"))
	}
	if c.json {
		return c.outJSON(map[string]string{"version": instance.Version})
	}
	fmt.Fprintf(c.stdout, "parley %s\n", instance.Version)
	return nil
}

func cmdManifest(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("manifest")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		return cmp.Or(err, usageErr("manifest takes no arguments"))
	}
	a, err := c.client(false)
	if err != nil {
		return err
	}
	var m struct {
		Parley string     `json:"parley"`
		Realm  string     `json:"realm"`
		Acts   []core.Act `json:"acts"`
		Ops    []struct {
			Name   string `json:"name"`
			Method string `json:"method"`
			Path   string `json:"path"`
			Right  string `json:"right"`
		} `json:"operations"`
	}
	if done, err := c.show(ctx, a, "get_manifest", nil, nil, nil, &m); done {
		return err
	}
	fmt.Fprintf(c.stdout, "Parley %s at %s, realm %s\n\nacts:\n", m.Parley, a.base, m.Realm)
	tw := newTable(c.stdout)
	for _, act := range m.Acts {
		fmt.Fprintf(tw, "  %s\t%s\tawaits: %s\n", act.Kind, act.Does, act.Awaits)
	}
	tw.Flush()
	fmt.Fprintln(c.stdout, "\noperations:")
	tw = newTable(c.stdout)
	for _, op := range m.Ops {
		fmt.Fprintf(tw, "  %s\t%s %s\t%s\n", op.Name, op.Method, op.Path, dash(op.Right))
	}
	return tw.Flush()
}

// --- reading

func cmdInbox(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("inbox")
	ext := fs.String("extension", "", "only turns of this extension of your identity")
	since := fs.String("since", "", "the cursor of an earlier answer: only newer turns")
	limit := fs.Int("limit", 0, "page size")
	follow := fs.Bool("follow", false, "keep polling and print new turns as they come")
	_, a, err := c.begin(fs, args, 0, "inbox takes no arguments")
	if err != nil {
		return err
	}
	q := url.Values{}
	if given(fs, "extension") {
		q.Set("extension", *ext)
	}
	if *limit > 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	if *follow {
		return c.follow(ctx, *since, func(since string) ([]feedItem, string, error) {
			q.Set("limit", strconv.Itoa(followPage))
			if since != "" {
				q.Set("since", since)
			}
			var page struct {
				Threads []json.RawMessage `json:"threads"`
				Cursor  string            `json:"cursor"`
			}
			if _, err := a.get(ctx, "inbox", nil, q, nil, &page); err != nil {
				return nil, "", err
			}
			items := make([]feedItem, 0, len(page.Threads))
			for _, r := range page.Threads {
				var t core.ThreadSummary
				if err := json.Unmarshal(r, &t); err != nil {
					return nil, "", err
				}
				line := fmt.Sprintf("%s  %-8s %-22s awaiting %s  %s", stamp(t.UpdatedAt), t.ID, stateShort(t.ThreadState), awaitingText(t.Awaiting), oneLine(t.Title, 60))
				items = append(items, feedItem{key: fmt.Sprintf("%s#%d", t.ID, t.AwaitingVersion), raw: r, line: line})
			}
			return items, page.Cursor, nil
		})
	}
	if *since != "" {
		q.Set("since", *since)
	}
	var page core.InboxPage
	if done, err := c.show(ctx, a, "inbox", nil, q, nil, &page); done {
		return err
	}
	if len(page.Threads) == 0 {
		fmt.Fprintln(c.stdout, "Nothing awaits you.")
	} else if err := printThreads(c.stdout, page.Threads); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "(only what is new: parley inbox --since %s)\n", page.Cursor)
	return nil
}

func cmdQueue(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("queue")
	cursor := fs.String("cursor", "", "the cursor of the previous page")
	limit := fs.Int("limit", 0, "page size")
	_, a, err := c.begin(fs, args, 0, "queue takes no arguments")
	if err != nil {
		return err
	}
	var page core.QueuePage
	if done, err := c.show(ctx, a, "queue", nil, pageQuery(*cursor, *limit), nil, &page); done {
		return err
	}
	if len(page.Threads) == 0 {
		fmt.Fprintln(c.stdout, "The review queue is empty.")
	} else if err := printQueue(c.stdout, page.Threads); err != nil {
		return err
	}
	c.more(page.Cursor, "queue")
	return nil
}

func pageQuery(cursor string, limit int) url.Values {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

func cmdThreads(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("threads")
	state := fs.String("state", "", "only threads in this state")
	cursor := fs.String("cursor", "", "the cursor of the previous page")
	limit := fs.Int("limit", 0, "page size")
	_, a, err := c.begin(fs, args, 0, "threads takes no arguments")
	if err != nil {
		return err
	}
	q := pageQuery(*cursor, *limit)
	if *state != "" {
		q.Set("state", *state)
	}
	var page core.ThreadPage
	if done, err := c.show(ctx, a, "list_threads", nil, q, nil, &page); done {
		return err
	}
	if len(page.Threads) == 0 {
		fmt.Fprintln(c.stdout, "No threads.")
	} else if err := printThreads(c.stdout, page.Threads); err != nil {
		return err
	}
	if *state != "" {
		c.more(page.Cursor, "threads --state "+*state)
	} else {
		c.more(page.Cursor, "threads")
	}
	return nil
}

func cmdThread(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("thread")
	pos, a, err := c.begin(fs, args, 1, "thread takes one thread id (th_N)")
	if err != nil {
		return err
	}
	id := pos[0]
	var pages [][]byte
	var views []core.ThreadView
	q := url.Values{}
	for {
		var v core.ThreadView
		raw, err := a.get(ctx, "get_thread", map[string]string{"thread": id}, q, nil, &v)
		if err != nil {
			return err
		}
		pages, views = append(pages, raw), append(views, v)
		if v.Cursor == nil || *v.Cursor == "" || len(pages) > 10000 {
			break
		}
		q.Set("cursor", *v.Cursor)
	}
	t := mergeThread(views)
	if c.json {
		if len(pages) == 1 {
			c.out(pages[0])
			return nil
		}
		return c.outJSON(t)
	}
	events, err := c.threadEvents(ctx, a, t.ID)
	if err != nil {
		fmt.Fprintf(c.stderr, "parley: the state history is missing: %v\n", err)
	}
	printThread(c.stdout, t, events)
	return nil
}

// mergeThread joins the pages of a thread into one view: the latest state
// fields and the whole message tree (a reply whose parent came on an
// earlier page goes beneath it).
func mergeThread(pages []core.ThreadView) core.ThreadView {
	t := pages[len(pages)-1]
	t.Cursor = nil
	if len(pages) == 1 {
		return t
	}
	var all []*core.MessageView
	var flatten func([]*core.MessageView)
	flatten = func(ms []*core.MessageView) {
		for _, m := range ms {
			all = append(all, m)
			flatten(m.Replies)
			m.Replies = nil
		}
	}
	for _, p := range pages {
		flatten(p.Messages)
	}
	num := func(id string) int64 { n, _ := strconv.ParseInt(strings.TrimPrefix(id, "msg_"), 10, 64); return n }
	slices.SortStableFunc(all, func(a, b *core.MessageView) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(num(a.ID), num(b.ID)))
	})
	byID := map[string]*core.MessageView{}
	for _, m := range all {
		byID[m.ID] = m
	}
	t.Messages = []*core.MessageView{}
	for _, m := range all {
		if m.Parent != nil && byID[*m.Parent] != nil {
			p := byID[*m.Parent]
			p.Replies = append(p.Replies, m)
		} else {
			t.Messages = append(t.Messages, m)
		}
	}
	return t
}

// threadEvents reads a thread's whole state history.
func (c *cli) threadEvents(ctx context.Context, a *api, thread string) ([]core.EventView, error) {
	var out []core.EventView
	seen := map[int64]bool{}
	q := url.Values{"thread": {thread}, "limit": {strconv.Itoa(followPage)}}
	for range 1000 {
		var page core.EventPage
		if _, err := a.get(ctx, "events", nil, q, nil, &page); err != nil {
			return out, err
		}
		fresh := 0
		for _, e := range page.Events {
			if !seen[e.Seq] {
				seen[e.Seq] = true
				out = append(out, e)
				fresh++
			}
		}
		if len(page.Events) < followPage || fresh == 0 {
			break
		}
		q.Set("since", page.Cursor)
	}
	slices.SortFunc(out, func(a, b core.EventView) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

func cmdEvents(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("events")
	thread := fs.String("thread", "", "only this thread's events")
	since := fs.String("since", "", "the cursor of an earlier answer: only newer events")
	limit := fs.Int("limit", 0, "one page of at most this many events")
	follow := fs.Bool("follow", false, "keep polling and print new events as they come")
	_, a, err := c.begin(fs, args, 0, "events takes no arguments")
	if err != nil {
		return err
	}
	poll := func(since string, limit int) (raw []byte, items []feedItem, cursor string, err error) {
		q := url.Values{}
		if *thread != "" {
			q.Set("thread", *thread)
		}
		if since != "" {
			q.Set("since", since)
		}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		var page struct {
			Events []json.RawMessage `json:"events"`
			Cursor string            `json:"cursor"`
		}
		if raw, err = a.get(ctx, "events", nil, q, nil, &page); err != nil {
			return nil, nil, "", err
		}
		for _, r := range page.Events {
			var e core.EventView
			if err := json.Unmarshal(r, &e); err != nil {
				return nil, nil, "", err
			}
			items = append(items, feedItem{key: fmt.Sprintf("%s#%d", e.Thread, e.Seq), raw: r, line: eventLine(e)})
		}
		return raw, items, page.Cursor, nil
	}
	if *follow {
		return c.follow(ctx, *since, func(since string) ([]feedItem, string, error) {
			_, items, cursor, err := poll(since, followPage)
			return items, cursor, err
		})
	}
	if *limit > 0 { // one page, as the API gives it
		raw, items, cursor, err := poll(*since, *limit)
		if err != nil {
			return err
		}
		if c.json {
			c.out(raw)
			return nil
		}
		return c.printEvents(items, cursor)
	}
	// Everything up to now: pages until one is short or brings nothing new.
	var all []feedItem
	seen := map[string]bool{}
	cursor := *since
	for range 100000 {
		_, items, next, err := poll(cursor, followPage)
		if err != nil {
			return err
		}
		fresh := 0
		for _, it := range items {
			if !seen[it.key] {
				seen[it.key] = true
				all = append(all, it)
				fresh++
			}
		}
		cursor = next
		if len(items) < followPage || fresh == 0 {
			break
		}
	}
	if c.json {
		page := struct {
			Events []json.RawMessage `json:"events"`
			Cursor string            `json:"cursor"`
		}{Events: []json.RawMessage{}, Cursor: cursor}
		for _, it := range all {
			page.Events = append(page.Events, it.raw)
		}
		return c.outJSON(page)
	}
	return c.printEvents(all, cursor)
}

func (c *cli) printEvents(items []feedItem, cursor string) error {
	if len(items) == 0 {
		fmt.Fprintln(c.stdout, "No events.")
	}
	for _, it := range items {
		fmt.Fprintln(c.stdout, it.line)
	}
	fmt.Fprintf(c.stdout, "(only what is new: parley events --since %s)\n", cursor)
	return nil
}

func cmdClaim(ctx context.Context, c *cli, args []string) error {
	pos, a, err := c.begin(c.flags("claim"), args, 1, "claim takes one claim id (cl_N)")
	if err != nil {
		return err
	}
	var cl core.ClaimView
	if done, err := c.show(ctx, a, "get_claim", map[string]string{"claim": pos[0]}, nil, nil, &cl); done {
		return err
	}
	printClaim(c.stdout, cl)
	return nil
}

func cmdClaims(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("claims")
	thread := fs.String("thread", "", "only claims made in this thread")
	state := fs.String("state", "", "only claims in this state")
	cursor := fs.String("cursor", "", "the cursor of the previous page")
	limit := fs.Int("limit", 0, "page size")
	_, a, err := c.begin(fs, args, 0, "claims takes no arguments")
	if err != nil {
		return err
	}
	q := pageQuery(*cursor, *limit)
	if *thread != "" {
		q.Set("thread", *thread)
	}
	if *state != "" {
		q.Set("state", *state)
	}
	var page core.ClaimPage
	if done, err := c.show(ctx, a, "list_claims", nil, q, nil, &page); done {
		return err
	}
	if len(page.Claims) == 0 {
		fmt.Fprintln(c.stdout, "No claims.")
	} else if err := printClaims(c.stdout, page.Claims); err != nil {
		return err
	}
	c.more(page.Cursor, "claims")
	return nil
}

// --- following a feed

// followPage is the page size --follow asks for (the API's maximum).
const followPage = 200

// feedItem is one entry of a feed: its key for dropping repeats, the JSON
// as sent, and its line for people.
type feedItem struct {
	key  string
	raw  json.RawMessage
	line string
}

// follow polls a feed with the cursor it returns, drops repeats (a feed
// may repeat an entry within its settle window), prints each new entry as
// a line (one JSON object a line with --json), and stops when ctx ends.
// Network trouble, unavailable and rate_limited are waited out.
func (c *cli) follow(ctx context.Context, since string, poll func(since string) ([]feedItem, string, error)) error {
	seen := newSeenSet(1 << 16)
	backoff := c.every
	for {
		items, cursor, err := poll(since)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			wait, ok := transient(err, backoff)
			if !ok {
				return err
			}
			fmt.Fprintf(c.stderr, "parley: %v (retrying in %s)\n", err, wait)
			if !sleep(ctx, wait) {
				return nil
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = c.every
		fresh := 0
		for _, it := range items {
			if !seen.add(it.key) {
				continue
			}
			fresh++
			if c.json {
				var b bytes.Buffer
				if err := json.Compact(&b, it.raw); err != nil {
					return err
				}
				b.WriteByte('\n')
				if _, err := c.stdout.Write(b.Bytes()); err != nil {
					return err
				}
			} else if _, err := fmt.Fprintln(c.stdout, it.line); err != nil {
				return err
			}
		}
		if cursor != "" {
			since = cursor
		}
		if len(items) >= followPage && fresh > 0 {
			continue // more is waiting
		}
		if !sleep(ctx, c.every) {
			return nil
		}
	}
}

// transient says whether a feed error is worth waiting out, and how long.
func transient(err error, backoff time.Duration) (time.Duration, bool) {
	if _, ok := errors.AsType[*netError](err); ok {
		return backoff, true
	}
	if ae, ok := errors.AsType[*apiError](err); ok && (ae.Reason == "unavailable" || ae.Reason == "rate_limited" || ae.Status >= 500) {
		if s, err := strconv.Atoi(ae.RetryAfter); err == nil && s > 0 {
			return time.Duration(s) * time.Second, true
		}
		return backoff, true
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// seenSet remembers the last n keys.
type seenSet struct {
	keys  map[string]bool
	order []string
	n     int
}

func newSeenSet(n int) *seenSet { return &seenSet{keys: map[string]bool{}, n: n} }

// add reports whether key is new, and remembers it.
func (s *seenSet) add(key string) bool {
	if s.keys[key] {
		return false
	}
	s.keys[key] = true
	s.order = append(s.order, key)
	if len(s.order) > s.n {
		delete(s.keys, s.order[0])
		s.order = s.order[1:]
	}
	return true
}

// --- writing

// envelope is what post sends (docs/protocol.md §3; the dialectic fields only
// when given).
type envelope struct {
	Kind       string           `json:"kind"`
	Thread     string           `json:"thread,omitempty"`
	Parent     string           `json:"parent,omitempty"`
	From       *fromField       `json:"from,omitempty"`
	Body       string           `json:"body"`
	Provenance *core.Provenance `json:"provenance,omitempty"`
	Claim      string           `json:"claim,omitempty"`
	Evidence   []core.Evidence  `json:"evidence,omitempty"`
	Supersedes []string         `json:"supersedes,omitempty"`
	ValidUntil string           `json:"valid_until,omitempty"`
}

type fromField struct {
	Extension string `json:"extension"`
}

// listFlag is a flag that may be given more than once.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// parseEvidence reads kind=ref[::note], or a JSON object {kind, ref, note}.
// The note follows the last "::" (refs such as sha256:… and https://…
// hold single colons; end a ref that holds "::" with a trailing "::").
func parseEvidence(s string) (core.Evidence, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "{") {
		var e core.Evidence
		d := json.NewDecoder(strings.NewReader(s))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return e, usageErr("--evidence %q: %v", s, err)
		}
		return e, nil
	}
	kind, rest, ok := strings.Cut(s, "=")
	if !ok || kind == "" || rest == "" {
		return core.Evidence{}, usageErr("--evidence takes kind=ref[::note] (kinds: url, hash, artifact, commit, log, reproducer, note, other), not %q", s)
	}
	e := core.Evidence{Kind: kind, Ref: rest}
	if i := strings.LastIndex(rest, "::"); i >= 0 {
		e.Ref, e.Note = rest[:i], strings.TrimSpace(rest[i+2:])
	}
	return e, nil
}

func cmdPost(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageErr("post takes the kind first: parley post KIND --thread th_N \"…\"")
	}
	return c.post(ctx, args[0], args[1:], false)
}

// actCommand is the shortcut for one act: `parley answer th_N "…"`.
func actCommand(kind core.Kind) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error { return c.post(ctx, string(kind), args, true) }
}

// post posts one message. In the shortcut form a first argument th_N is
// the thread and cl_N the claim.
func (c *cli) post(ctx context.Context, kind string, args []string, shortcut bool) error {
	fs := c.flags(kind)
	var env envelope
	var evidence, supersedes listFlag
	fs.StringVar(&env.Thread, "thread", "", "the thread: th_N")
	fs.StringVar(&env.Parent, "parent", "", "the message replied to: msg_N (default: the thread's root)")
	ext := fs.String("extension", "", "the sub-agent speaking, within your identity")
	fs.StringVar(&env.Claim, "claim", "", "attest, refute, verify: the claim acted on (cl_N)")
	fs.Var(&evidence, "evidence", "kind=ref[::note] (repeatable)")
	fs.Var(&supersedes, "supersedes", "assert: a claim this one replaces, cl_N (repeatable)")
	fs.StringVar(&env.ValidUntil, "valid-until", "", "assert: RFC 3339 time after which the claim reads as expired")
	model := fs.String("model", "", "provenance: the model that wrote the message")
	key := fs.String("idempotency-key", "", "a retry with the same key returns the first result and posts nothing new")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if shortcut && len(pos) > 0 {
		switch {
		case env.Thread == "" && threadRef.MatchString(pos[0]):
			env.Thread, pos = pos[0], pos[1:]
		case env.Claim == "" && claimRef.MatchString(pos[0]):
			env.Claim, pos = pos[0], pos[1:]
		}
	}
	env.Kind = kind
	env.Body = strings.Join(pos, " ")
	if env.Body == "-" {
		b, err := io.ReadAll(io.LimitReader(c.stdin, 1<<20))
		if err != nil {
			return fmt.Errorf("reading the body from stdin: %w", err)
		}
		env.Body = strings.TrimRight(string(b), "\r\n")
	}
	if strings.TrimSpace(env.Body) == "" {
		return usageErr("%s needs the message's body (\"-\" reads it from stdin)", kind)
	}
	if given(fs, "extension") {
		env.From = &fromField{Extension: *ext}
	}
	if *model != "" {
		env.Provenance = &core.Provenance{Model: *model}
	}
	for _, s := range evidence {
		e, err := parseEvidence(s)
		if err != nil {
			return err
		}
		env.Evidence = append(env.Evidence, e)
	}
	env.Supersedes = supersedes
	a, err := c.client(true)
	if err != nil {
		return err
	}
	var header http.Header
	if *key != "" {
		header = http.Header{"Idempotency-Key": {*key}}
	}
	raw, err := a.call(ctx, "post", nil, nil, env, header)
	if err != nil {
		return err
	}
	if c.json {
		c.out(raw)
		return nil
	}
	var res core.PostResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("unexpected answer to post: %v", err)
	}
	m := res.Message
	if m == nil {
		return fmt.Errorf("unexpected answer to post: no message")
	}
	if env.Thread == "" && m.Parent == nil {
		fmt.Fprintf(c.stdout, "opened %s: %s [%s] by %s\n", m.Thread, m.ID, m.Kind, partyText(m.From))
	} else {
		fmt.Fprintf(c.stdout, "posted %s [%s] by %s in %s\n", m.ID, m.Kind, partyText(m.From), m.Thread)
	}
	fmt.Fprintf(c.stdout, "  state     %s\n", stateText(res.Thread))
	fmt.Fprintf(c.stdout, "  awaiting  %s\n", awaitingText(res.Thread.Awaiting))
	if res.Claim != nil {
		fmt.Fprintf(c.stdout, "  claim     %s %s\n", res.Claim.ID, res.Claim.State)
	}
	if res.Replayed {
		fmt.Fprintln(c.stdout, "  (replayed: the first result for this idempotency key; nothing new was posted)")
	}
	return nil
}

// threadAction runs mark, confirm or reopen and prints the thread's state.
func (c *cli) threadAction(ctx context.Context, a *api, op, thread string, body any) error {
	var st core.ThreadState
	if done, err := c.show(ctx, a, op, map[string]string{"thread": thread}, nil, body, &st); done {
		return err
	}
	printState(c.stdout, st)
	return nil
}

func cmdMark(ctx context.Context, c *cli, args []string) error {
	pos, a, err := c.begin(c.flags("mark"), args, 2, "mark takes a thread and a state: parley mark th_N STATE")
	if err != nil {
		return err
	}
	return c.threadAction(ctx, a, "mark", pos[0], map[string]string{"state": pos[1]})
}

func cmdConfirm(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("confirm")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageErr("confirm takes a thread, and optionally the proposed state you saw: parley confirm th_N [STATE]")
	}
	a, err := c.client(true)
	if err != nil {
		return err
	}
	state := ""
	if len(pos) == 2 {
		state = pos[1]
	} else {
		// Read the proposal and confirm exactly what was seen: if it
		// changes meanwhile, the server confirms nothing.
		var t core.ThreadView
		if _, err := a.get(ctx, "get_thread", map[string]string{"thread": pos[0]}, url.Values{"limit": {"1"}}, nil, &t); err != nil {
			return err
		}
		state = string(t.State)
		if !c.json {
			fmt.Fprintf(c.stdout, "%s  seen: %s\n", t.ID, stateText(t.ThreadState))
		}
	}
	return c.threadAction(ctx, a, "confirm", pos[0], map[string]string{"state": state})
}

func cmdReopen(ctx context.Context, c *cli, args []string) error {
	pos, a, err := c.begin(c.flags("reopen"), args, 1, "reopen takes one thread id (th_N)")
	if err != nil {
		return err
	}
	return c.threadAction(ctx, a, "reopen", pos[0], nil) // reopen takes no body
}

// --- tokens over the API

// apiToken is `parley token create|list|revoke` without --dynamodb: the
// token operations of the API, for a human's token.
func apiToken(ctx context.Context, c *cli, sub string, args []string) error {
	fs := c.flags("token " + sub)
	identity := fs.String("identity", "", "identity: <realm>:<handle> or human:<name>")
	rights := fs.String("rights", "", "comma-separated rights: read,write,lock,verify")
	label := fs.String("label", "", "label shown for a lock holder's marks")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	a, err := c.client(true)
	if errors.Is(err, errNotLoggedIn) {
		return usageErr("token commands go over the API when logged in (`parley login URL`, or %s and %s), or to the table directly with --dynamodb URL|aws [--table NAME]", envURL, envToken)
	}
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		if *identity == "" || len(pos) > 0 {
			return usageErr("token create needs --identity (and --rights unless it is human:…)")
		}
		body := map[string]any{"identity": *identity}
		if *rights != "" {
			var list []string
			for r := range strings.SplitSeq(*rights, ",") {
				list = append(list, strings.TrimSpace(r))
			}
			body["rights"] = list
		}
		if *label != "" {
			body["label"] = *label
		}
		var t core.NewToken
		if done, err := c.show(ctx, a, "create_token", nil, nil, body, &t); done {
			return err
		}
		fmt.Fprintf(c.stdout, "%s\n", t.Secret)
		fmt.Fprintf(c.stdout, "# %s  %s  %s  (the secret above is shown once; only its hash is stored)\n", t.ID, t.Identity, joinRights(t.Rights))
		return nil
	case "list":
		if len(pos) > 0 {
			return usageErr("token list takes no arguments")
		}
		all, err := listTokens(ctx, a)
		if err != nil {
			return err
		}
		if c.json {
			return c.outJSON(core.TokenPage{Tokens: all})
		}
		return printTokens(c.stdout, all)
	case "revoke":
		if len(pos) != 1 {
			return usageErr("token revoke takes one token id (tk_…) or a unique prefix of one")
		}
		id := pos[0]
		if !tokenID.MatchString(id) { // a prefix: find the one token it names
			all, err := listTokens(ctx, a)
			if err != nil {
				return err
			}
			prefix := id
			if !strings.HasPrefix(prefix, "tk_") {
				prefix = "tk_" + prefix
			}
			var match []string
			for _, t := range all {
				if strings.HasPrefix(t.ID, prefix) {
					match = append(match, t.ID)
				}
			}
			switch len(match) {
			case 0:
				return fmt.Errorf("no token matches %q", id)
			case 1:
				id = match[0]
			default:
				return fmt.Errorf("%q matches %d tokens (%s); give more of the id", id, len(match), strings.Join(match, ", "))
			}
		}
		var t core.TokenView
		if done, err := c.show(ctx, a, "revoke_token", map[string]string{"id": id}, nil, nil, &t); done {
			return err
		}
		fmt.Fprintf(c.stdout, "revoked %s (%s)\n", t.ID, t.Identity)
		return nil
	}
	return usageErr("unknown token command %q (create, list, revoke)", sub)
}

func listTokens(ctx context.Context, a *api) ([]core.TokenView, error) {
	all := []core.TokenView{}
	q := url.Values{"limit": {strconv.Itoa(followPage)}}
	for range 100000 {
		var page core.TokenPage
		if _, err := a.get(ctx, "list_tokens", nil, q, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Tokens...)
		if page.Cursor == nil || *page.Cursor == "" {
			break
		}
		q.Set("cursor", *page.Cursor)
	}
	return all, nil
}
