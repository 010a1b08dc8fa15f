package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/localdb"
)

// The loop-safety simulation: scripted naive agents talk to a real Parley
// (HTTP API, embedded DynamoDB, loopback only) until nobody has anything left
// to do, or a cap. Each scenario runs with the loop damping on and off.

type simResult struct {
	Scenario   string
	Damping    bool
	Messages   int // accepted posts, the opening ones included
	Threads    int
	Quiesced   bool
	Human      bool // every thread ended awaiting a human
	Refusals   map[string]int
	Seconds    float64
	CapReached bool
}

// bot is one scripted agent. next decides its reply to the thread as it
// reads it; ok=false means it has nothing to say.
type bot struct {
	name, token string
	ext         string
	watch       bool // naive: reacts to the newest message whatever awaiting says
	selfish     bool // replies even to its own newest message
	next        func(n int, last map[string]any) (kind, body string, ok bool)
	flip        []string // extensions to cycle through (an evasive self-replier)
	rotate      bool     // a new extension for every message (evades per-party counting)
	spread      int      // after escalating, open a new thread this many times
	gaveUp      bool
	escalated   bool
	n           int
}

type simClient struct {
	base string
	http *http.Client
}

func (c simClient) do(method, path, token string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		return res.StatusCode, nil, err
	}
	return res.StatusCode, m, nil
}

// newest returns the thread's newest message (the highest id).
func newest(thread map[string]any) map[string]any {
	var best map[string]any
	bestID := -1
	var walk func(list []any)
	walk = func(list []any) {
		for _, x := range list {
			m := x.(map[string]any)
			var id int
			fmt.Sscanf(m["id"].(string), "msg_%d", &id)
			if id > bestID {
				best, bestID = m, id
			}
			if r, ok := m["replies"].([]any); ok {
				walk(r)
			}
		}
	}
	walk(thread["messages"].([]any))
	return best
}

func from(m map[string]any) (string, string) {
	f := m["from"].(map[string]any)
	return f["identity"].(string), f["extension"].(string)
}

// awaits reports whether the thread awaits the bot's party.
func awaits(thread map[string]any, identity, ext string) bool {
	a, ok := thread["awaiting"].(map[string]any)
	if !ok {
		return false
	}
	switch a["scope"] {
	case "party":
		return a["identity"] == identity && a["extension"] == ext
	case "any":
		ex := a["except"].(map[string]any)
		return ex["identity"] != identity || ex["extension"] != ext
	}
	return false
}

type scenario struct {
	name   string
	opener string // the bot that opens the thread
	ask    string
	bots   func(tok map[string]string) []*bot
}

func counter(kind string, format string) func(int, map[string]any) (string, string, bool) {
	return func(n int, _ map[string]any) (string, string, bool) { return kind, fmt.Sprintf(format, n), true }
}

func constant(kind, body string) func(int, map[string]any) (string, string, bool) {
	return func(int, map[string]any) (string, string, bool) { return kind, body, true }
}

var scenarios = []scenario{
	{"always-reply bots", "a", "What is the capital of Australia?", func(tok map[string]string) []*bot {
		return []*bot{
			{name: "a", token: tok["a"], next: counter("clarify", "Interesting — can you elaborate on point %d?")},
			{name: "b", token: tok["b"], next: counter("answer", "Here is more detail, part %d.")},
		}
	}},
	{"politeness bots", "a", "Could you review my draft?", func(tok map[string]string) []*bot {
		return []*bot{
			{name: "a", token: tok["a"], watch: true, next: constant("inform", "Thank you so much!")},
			{name: "b", token: tok["b"], watch: true, next: constant("inform", "You're very welcome!")},
		}
	}},
	{"two objectors", "a", "Tabs or spaces?", func(tok map[string]string) []*bot {
		return []*bot{
			{name: "a", token: tok["a"], next: counter("object", "No, tabs are better, reason %d.")},
			{name: "b", token: tok["b"], next: counter("object", "No, spaces are better, reason %d.")},
		}
	}},
	{"self-replying bot", "a", "Let me think aloud.", func(tok map[string]string) []*bot {
		return []*bot{{name: "a", token: tok["a"], watch: true, selfish: true, next: counter("inform", "And another thought, %d.")}}
	}},
	{"self-replying bot, two extensions", "a", "Let me think aloud with two voices.", func(tok map[string]string) []*bot {
		return []*bot{{name: "a", token: tok["a"], watch: true, selfish: true, flip: []string{"left", "right"}, next: counter("object", "My other half is wrong, %d.")}}
	}},
	// Adversarial agents: each one's trick defeats a rule that counts
	// parties (identity and extension) or compares bodies byte for byte.
	{"adversarial: objectors rotating extensions", "a", "Tabs or spaces, finally?", func(tok map[string]string) []*bot {
		return []*bot{
			{name: "a", token: tok["a"], watch: true, rotate: true, next: counter("object", "No, tabs are better, reason %d.")},
			{name: "b", token: tok["b"], watch: true, rotate: true, next: counter("object", "No, spaces are better, reason %d.")},
		}
	}},
	{"adversarial: one identity, three voices", "a", "A committee of one.", func(tok map[string]string) []*bot {
		return []*bot{{name: "a", token: tok["a"], watch: true, selfish: true, flip: []string{"chair", "member", "clerk"}, next: counter("inform", "The committee notes point %d.")}}
	}},
	{"adversarial: politeness with disguises", "a", "Could you review my draft again?", func(tok map[string]string) []*bot {
		disguise := func(body string) func(int, map[string]any) (string, string, bool) {
			return func(n int, _ map[string]any) (string, string, bool) {
				forms := []string{body, strings.ToLower(body), body + "\u200b", strings.ToUpper(body), strings.ReplaceAll(body, "é", "e\u0301"), "  " + body + "  "}
				return "inform", forms[n%len(forms)], true
			}
		}
		return []*bot{
			{name: "a", token: tok["a"], watch: true, next: disguise("Merci, c'est parfait!")},
			{name: "b", token: tok["b"], watch: true, next: disguise("Je vous en prie, à bientôt, café?")},
		}
	}},
	{"adversarial: spreaders across threads", "a", "Round one: vim or emacs?", func(tok map[string]string) []*bot {
		return []*bot{
			{name: "a", token: tok["a"], watch: true, rotate: true, spread: 3, next: counter("object", "vim, argument %d.")},
			{name: "b", token: tok["b"], watch: true, rotate: true, next: counter("object", "emacs, argument %d.")},
		}
	}},
}

// runScenario plays one scenario against a fresh server.
func runScenario(ctx context.Context, sc scenario, damping bool, maxMessages int, maxTime time.Duration) (simResult, error) {
	res := simResult{Scenario: sc.name, Damping: damping, Refusals: map[string]int{}}
	db, err := localdb.Start("127.0.0.1:0")
	if err != nil {
		return res, err
	}
	defer db.Close()
	lim := core.ReferenceLimits()
	lim.PostsPerMinute = 0 // the scenarios run faster than real agents; the rate limit has its own tests
	if !damping {
		lim.Exchange, lim.DuplicateBody = 0, false
	}
	sf := storeFlags{dynamodb: db.URL, table: "sim", realm: "ainotes"}
	inst, err := sf.open(ctx, core.Options{Limits: lim}, true)
	if err != nil {
		return res, err
	}
	svc := inst.Service
	handler, err := inst.Handler(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return res, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cl := simClient{base: "http://" + ln.Addr().String(), http: &http.Client{Timeout: 10 * time.Second}}

	tok := map[string]string{}
	for _, name := range []string{"a", "b"} {
		secret, _, err := svc.CreateToken(ctx, core.TokenSpec{Identity: "ainotes:" + name, Rights: []string{"read", "write"}})
		if err != nil {
			return res, err
		}
		tok[name] = secret
	}
	human, _, err := svc.CreateToken(ctx, core.TokenSpec{Identity: "human:hana"})
	if err != nil {
		return res, err
	}
	bots := sc.bots(tok)
	start := time.Now()
	status, opened, err := cl.do("POST", "/v1/messages", tok[sc.opener], map[string]any{"kind": "ask", "body": sc.ask})
	if err != nil || status != 201 {
		return res, fmt.Errorf("opening %s: %d %v", sc.name, status, err)
	}
	thread := opened["thread"].(map[string]any)["id"].(string)
	threads := []string{thread}
	res.Messages = 1
	for res.Messages < maxMessages && time.Since(start) < maxTime {
		spoke := false
		for _, b := range bots {
			if b.gaveUp {
				continue
			}
			_, th, err := cl.do("GET", "/v1/threads/"+thread, b.token, nil)
			if err != nil {
				return res, err
			}
			last := newest(th)
			identity, ext := from(last)
			me := "ainotes:" + b.name
			if len(b.flip) > 0 {
				b.ext = b.flip[b.n%len(b.flip)]
			}
			if b.rotate {
				b.ext = fmt.Sprintf("e%d", b.n)
			}
			// An inbox-driven bot speaks when the thread awaits it; a
			// naive watcher whenever the newest message is not its own
			// (the self-replier does not even check that).
			due := awaits(th, me, b.ext)
			if b.watch {
				due = identity != me || ext != b.ext || b.selfish
			}
			if !due {
				continue
			}
			b.n++
			kind, body, ok := b.next(b.n, last)
			if !ok {
				continue
			}
			env := map[string]any{"kind": kind, "thread": thread, "parent": last["id"], "body": body}
			if b.ext != "" {
				env["from"] = map[string]any{"extension": b.ext}
			}
			st, out, err := cl.do("POST", "/v1/messages", b.token, env)
			if err != nil {
				return res, err
			}
			if st == 201 {
				res.Messages++
				spoke = true
				continue
			}
			reason := fmt.Sprint(out["error"].(map[string]any)["reason"])
			detail, _ := out["error"].(map[string]any)["detail"].(map[string]any)
			if limit, ok := detail["limit"].(string); ok {
				reason += ":" + limit
			}
			res.Refusals[reason]++
			// An obedient naive agent follows the refusal's hint once:
			// escalate to a human; any other refusal makes it stop.
			if _, hinted := detail["hint"]; hinted && !b.escalated {
				b.escalated = true
				st, _, err := cl.do("POST", "/v1/messages", b.token, map[string]any{"kind": "escalate", "thread": thread, "parent": last["id"], "body": "We are going in circles; a human should decide.", "from": map[string]any{"extension": b.ext}})
				if err != nil {
					return res, err
				}
				if st == 201 {
					res.Messages++
					spoke = true
				}
				// A spreader takes the quarrel to a new thread.
				if b.spread > 0 {
					b.spread--
					st, opened, err := cl.do("POST", "/v1/messages", b.token, map[string]any{"kind": "ask", "body": fmt.Sprintf("Round %d: the same question, elsewhere.", len(threads)+1)})
					if err != nil {
						return res, err
					}
					if st == 201 {
						res.Messages++
						thread = opened["thread"].(map[string]any)["id"].(string)
						threads = append(threads, thread)
						for _, o := range bots {
							o.escalated = false
						}
					}
				}
				continue
			}
			b.gaveUp = true
		}
		if !spoke {
			res.Quiesced = true
			break
		}
	}
	res.CapReached = !res.Quiesced
	res.Seconds = time.Since(start).Seconds()
	res.Threads = len(threads)
	// Reached a human: every thread is in the human's inbox because it
	// awaits humans (an open call would be there too, but nobody escalated it).
	_, inbox, err := cl.do("GET", "/v1/inbox?limit=200", human, nil)
	if err != nil {
		return res, err
	}
	escalated := map[string]bool{}
	for _, x := range inbox["threads"].([]any) {
		t := x.(map[string]any)
		if aw, _ := t["awaiting"].(map[string]any); aw["scope"] == "human" {
			escalated[t["id"].(string)] = true
		}
	}
	res.Human = true
	for _, th := range threads {
		res.Human = res.Human && escalated[th]
	}
	return res, nil
}

// simulate runs every scenario with damping on and off and prints (or
// writes into a document, between markers) a markdown table.
func simulate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	maxMessages := fs.Int("max-messages", 200, "stop a scenario after this many accepted messages")
	maxTime := fs.Duration("max-time", 30*time.Second, "stop a scenario after this long")
	write := fs.String("write", "", "replace the table between the simulation markers of this markdown file")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	results, err := runSimulation(ctx, *maxMessages, *maxTime)
	if err != nil {
		return err
	}
	table := simTable(results, *maxMessages)
	if *write == "" {
		_, err := fmt.Fprint(stdout, table)
		return err
	}
	doc, err := os.ReadFile(*write)
	if err != nil {
		return err
	}
	const begin, end = "<!-- simulation:begin -->", "<!-- simulation:end -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return errors.New(*write + " has no simulation markers")
	}
	out := append(append(append([]byte{}, doc[:i+len(begin)]...), "\n"+table...), doc[j:]...)
	if err := os.WriteFile(*write, out, 0o644); err != nil {
		return err
	}
	_, err = fmt.Fprint(stdout, table)
	return err
}

func runSimulation(ctx context.Context, maxMessages int, maxTime time.Duration) ([]simResult, error) {
	var out []simResult
	for _, sc := range scenarios {
		for _, damping := range []bool{true, false} {
			r, err := runScenario(ctx, sc, damping, maxMessages, maxTime)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sc.name, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func simTable(results []simResult, maxMessages int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | damping | threads | messages | quiet? | every thread reached a human | refusals |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		damping, quiet, human := "off", "no — cap", "no"
		if r.Damping {
			damping = "on"
		}
		if r.Quiesced {
			quiet = "yes"
		}
		if r.Human {
			human = "yes (escalated)"
		}
		var refusals []string
		for k, v := range r.Refusals {
			refusals = append(refusals, fmt.Sprintf("%s ×%d", k, v))
		}
		if len(refusals) == 0 {
			refusals = []string{"—"}
		}
		msgs := fmt.Sprint(r.Messages)
		if r.CapReached {
			msgs = fmt.Sprintf("≥ %d (cap)", r.Messages)
		}
		sort.Strings(refusals)
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s |\n", r.Scenario, damping, r.Threads, msgs, quiet, human, strings.Join(refusals, ", "))
	}
	fmt.Fprintf(&b, "\nCap: %d accepted messages per scenario. Regenerate with `make simulate`.\n", maxMessages)
	return b.String()
}
