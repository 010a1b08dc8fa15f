package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ainotes/parley/infra/testenv"
)

// TestBlackBox runs `parley serve` and checks the protocol from outside,
// over HTTP and MCP only: the same checks, unchanged, against moto_server
// (--dynamodb URL, the strict backend) and against the embedded default.
func TestBlackBox(t *testing.T) {
	backends := []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"moto", func(t *testing.T) []string {
			return []string{"--dynamodb", testenv.SharedMoto(t).URL, "--table", fmt.Sprintf("blackbox-%d-%d", os.Getpid(), time.Now().UnixNano())}
		}},
		{"embedded", func(*testing.T) []string { return nil }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			began := time.Now()
			// The tokens file, as an operator writes it.
			type token struct {
				Token    string   `json:"token"`
				Identity string   `json:"identity"`
				Rights   []string `json:"rights,omitempty"`
				Label    string   `json:"label,omitempty"`
			}
			entries := []token{
				{Identity: "ainotes:alice", Rights: []string{"read", "write"}},
				{Identity: "ainotes:bob", Rights: []string{"read", "write"}},
				{Identity: "ainotes:carol", Rights: []string{"read", "write"}},
				{Identity: "ainotes:mod", Rights: []string{"read", "write", "lock"}, Label: "mod"},
				{Identity: "ainotes:reader", Rights: []string{"read"}},
			}
			for i := range bbPosters / 2 {
				entries = append(entries, token{Identity: fmt.Sprintf("ainotes:p%02d", i), Rights: []string{"read", "write"}})
			}
			for i := range entries {
				entries[i].Token = bbToken(entries[i].Identity)
			}
			raw, err := json.Marshal(entries)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "tokens.json")
			if err := os.WriteFile(file, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			base, _ := startServe(t, append(b.args(t), "--tokens", file)...)
			bb := &blackBox{t: t, base: base, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: bbPosters}, Timeout: 60 * time.Second}}
			t.Cleanup(bb.client.CloseIdleConnections) // before the server stops
			bb.run()
			t.Logf("%s: black-box checks in %v", b.name, time.Since(began).Round(time.Millisecond))
		})
	}
}

const bbPosters = 32

func bbToken(identity string) string {
	return "bb-secret-" + strings.NewReplacer(":", "-").Replace(identity) + "-0123456789"
}

type blackBox struct {
	t      *testing.T
	base   string
	client *http.Client
}

// bbAnswer is one HTTP exchange.
type bbAnswer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// get reads a dotted path in the JSON body.
func (a bbAnswer) get(path string) any {
	var cur any = a.body
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func (a bbAnswer) str(path string) string { s, _ := a.get(path).(string); return s }
func (a bbAnswer) num(path string) int    { f, _ := a.get(path).(float64); return int(f) }
func (a bbAnswer) list(path string) []any { l, _ := a.get(path).([]any); return l }

func bbField(v any, path string) any {
	return bbAnswer{body: bbObject(v)}.get(path)
}

func bbObject(v any) map[string]any { m, _ := v.(map[string]any); return m }

// do sends a request as identity ("" for none); body is JSON-encoded
// unless it is a string. It reports transport errors as they are, so it
// can run in goroutines.
func (b *blackBox) do(method, path, identity string, body any, headers ...string) (bbAnswer, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return bbAnswer{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		return bbAnswer{}, err
	}
	if identity != "" {
		req.Header.Set("Authorization", "Bearer "+bbToken(identity))
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.client.Do(req)
	if err != nil {
		return bbAnswer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return bbAnswer{}, err
	}
	a := bbAnswer{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		return a, fmt.Errorf("%s %s: not a JSON object: %d %q", method, path, res.StatusCode, raw)
	}
	return a, nil
}

// must sends a request and insists on the status.
func (b *blackBox) must(want int, method, path, identity string, body any, headers ...string) bbAnswer {
	b.t.Helper()
	a, err := b.do(method, path, identity, body, headers...)
	if err != nil {
		b.t.Fatal(err)
	}
	if a.status != want {
		b.t.Fatalf("%s %s as %s: %d, want %d: %s", method, path, identity, a.status, want, a.raw)
	}
	return a
}

// refused insists on a refusal: its status and reason.
func (b *blackBox) refused(status int, reason, method, path, identity string, body any) bbAnswer {
	b.t.Helper()
	a := b.must(status, method, path, identity, body)
	if a.str("error.reason") != reason || a.str("error.message") == "" {
		b.t.Fatalf("%s %s as %s: refusal %s, want %s", method, path, identity, a.raw, reason)
	}
	return a
}

// mcp calls a tool over POST /mcp (JSON-RPC) and returns the result object.
func (b *blackBox) mcp(identity, tool string, args map[string]any) map[string]any {
	b.t.Helper()
	body := map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}}
	a := b.must(200, "POST", "/mcp", identity, body,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-06-18")
	if a.num("id") != 7 || a.str("jsonrpc") != "2.0" {
		b.t.Fatalf("mcp %s: not a JSON-RPC answer: %s", tool, a.raw)
	}
	res := bbObject(a.get("result"))
	if res == nil {
		b.t.Fatalf("mcp %s: no result: %s", tool, a.raw)
	}
	return res
}

// chain checks a thread's events: seq increasing, each from the previous to.
func (b *blackBox) chain(thread string) []any {
	b.t.Helper()
	evs := b.must(200, "GET", "/v1/events?thread="+thread+"&limit=200", "ainotes:reader", nil).list("events")
	prev, seq := "", 0
	for i, e := range evs {
		from, _ := bbField(e, "from").(string)
		s := int(bbField(e, "seq").(float64))
		if from != prev || s <= seq || bbField(e, "thread") != thread {
			b.t.Fatalf("%s: event %d breaks the chain (from %q after %q, seq %d after %d): %v", thread, i, from, prev, s, seq, evs)
		}
		prev, seq = bbField(e, "to").(string), s
	}
	return evs
}

// bbMessages flattens a thread's message tree.
func bbMessages(list []any) []map[string]any {
	var out []map[string]any
	for _, m := range list {
		mm := bbObject(m)
		out = append(out, mm)
		replies, _ := mm["replies"].([]any)
		out = append(out, bbMessages(replies)...)
	}
	return out
}

func (b *blackBox) run() {
	t := b.t
	const alice, bob, carol, mod, reader = "ainotes:alice", "ainotes:bob", "ainotes:carol", "ainotes:mod", "ainotes:reader"

	if m := b.must(200, "GET", "/v1/manifest", "", nil); len(m.body) == 0 {
		t.Fatal("an empty manifest")
	}
	// carol's inbox cursor from before anything was asked.
	inboxBefore := b.must(200, "GET", "/v1/inbox", carol, nil).str("cursor")

	// ask → bbAnswer (a proposal) → decide by the creator → confirm by a lock holder.
	ask := b.must(201, "POST", "/v1/messages", alice, map[string]any{"kind": "ask", "body": "Which port does make run use?"})
	th, root := ask.str("thread.id"), ask.str("message.id")
	if ask.str("thread.state") != "open" || ask.str("thread.awaiting.scope") != "any" || ask.str("thread.awaiting.except.identity") != alice {
		t.Fatalf("ask: %s", ask.raw)
	}
	ans := b.must(201, "POST", "/v1/messages", bob, map[string]any{"kind": "answer", "thread": th, "body": "8080."})
	if ans.str("thread.state") != "answered" || ans.get("thread.proposal") != true || ans.get("thread.state_confirmed_at") != nil ||
		ans.str("message.parent") != root || ans.str("thread.awaiting.identity") != alice {
		t.Fatalf("bbAnswer (a proposal awaiting alice): %s", ans.raw)
	}
	dec := b.must(201, "POST", "/v1/messages", alice, map[string]any{"kind": "decide", "thread": th, "parent": ans.str("message.id"), "body": "8080 it is."})
	if dec.str("thread.state") != "decided" || dec.get("thread.proposal") != true || dec.get("thread.awaiting") != nil {
		t.Fatalf("decide by the creator: %s", dec.raw)
	}
	conf := b.must(200, "POST", "/v1/threads/"+th+"/confirm", mod, map[string]any{"state": "decided"})
	if conf.str("state") != "decided" || conf.get("proposal") != false || conf.str("state_label") != "KI · mod" || conf.num("version") != 4 {
		t.Fatalf("confirm by the lock holder: %s", conf.raw)
	}

	// Read it back: the thread, the listing, its events, the instance's.
	read := b.must(200, "GET", "/v1/threads/"+th, reader, nil)
	msgs := bbMessages(read.list("messages"))
	if read.num("message_count") != 3 || len(msgs) != 3 || read.str("state") != "decided" || read.get("proposal") != false ||
		msgs[0]["id"] != root || msgs[1]["kind"] != "answer" || msgs[2]["kind"] != "decide" || msgs[2]["parent"] != ans.str("message.id") {
		t.Fatalf("read the thread: %s", read.raw)
	}
	listed := false
	for _, s := range b.must(200, "GET", "/v1/threads", reader, nil).list("threads") {
		listed = listed || bbField(s, "id") == th
	}
	if !listed {
		t.Fatalf("%s is not listed", th)
	}
	evs := b.chain(th)
	var trans []string
	for _, e := range evs {
		from, _ := bbField(e, "from").(string)
		trans = append(trans, from+">"+bbField(e, "to").(string))
	}
	if strings.Join(trans, " ") != ">open open>answered answered>decided decided>decided" {
		t.Fatalf("events of %s: %v", th, trans)
	}
	all := b.must(200, "GET", "/v1/events?limit=200", reader, nil)
	inFeed := map[float64]bool{}
	for _, e := range all.list("events") {
		if bbField(e, "thread") == th {
			inFeed[bbField(e, "seq").(float64)] = true
		}
	}
	if len(inFeed) != len(evs) || all.str("cursor") == "" {
		t.Fatalf("instance events hold %d of %s's %d: %s", len(inFeed), th, len(evs), all.raw)
	}

	// Inbox with since: carol's cursor from the start still brings a new
	// turn of hers (an entry may come twice within the settle window; the
	// turn is (id, awaiting_version)).
	ask2 := b.must(201, "POST", "/v1/messages", carol, map[string]any{"kind": "ask", "body": "Who reviews #42?"})
	th2 := ask2.str("thread.id")
	ans2 := b.must(201, "POST", "/v1/messages", bob, map[string]any{"kind": "answer", "thread": th2, "body": "Dana does."})
	inbox := b.must(200, "GET", "/v1/inbox?since="+url.QueryEscape(inboxBefore), carol, nil)
	found := false
	for _, s := range inbox.list("threads") {
		if bbField(s, "id") == th2 {
			found = bbField(s, "awaiting_version") == ans2.get("thread.awaiting_version") && bbField(s, "awaiting.identity") == carol
		}
		if bbField(s, "id") == th {
			t.Fatalf("carol's inbox holds %s, which awaits nobody: %s", th, inbox.raw)
		}
	}
	if !found || inbox.str("cursor") == "" {
		t.Fatalf("carol's inbox since the start lacks her turn in %s: %s", th2, inbox.raw)
	}
	again := b.must(200, "GET", "/v1/inbox?since="+url.QueryEscape(inbox.str("cursor")), carol, nil)
	for _, s := range again.list("threads") {
		if bbField(s, "id") != th2 {
			t.Fatalf("carol's inbox, polled on: %s", again.raw)
		}
	}

	// Refusals.
	ask3 := b.must(201, "POST", "/v1/messages", alice, map[string]any{"kind": "ask", "body": "Shall we ship on Friday?"})
	th3 := ask3.str("thread.id")
	b.refused(409, "self_reply", "POST", "/v1/messages", alice, map[string]any{"kind": "answer", "thread": th3, "body": "Yes, I say so myself."})
	b.refused(403, "thread_authority_missing", "POST", "/v1/threads/"+th3+"/mark", bob, map[string]any{"state": "decided"})
	b.refused(403, "token_right_missing", "POST", "/v1/messages", reader, map[string]any{"kind": "ask", "body": "May I?"})
	if a := b.refused(400, "invalid_body", "POST", "/v1/messages", alice, `{"kind":"ask","body":"x","votes":3}`); a.str("error.detail.field") != "votes" {
		t.Fatalf("invalid_body names no field: %s", a.raw)
	}
	b.refused(400, "invalid_body", "POST", "/v1/messages", alice, `{"kind":"ask",`)
	b.refused(404, "thread_not_found", "GET", "/v1/threads/th_987654", reader, nil)
	b.refused(404, "thread_not_found", "POST", "/v1/messages", bob, map[string]any{"kind": "answer", "thread": "th_987654", "body": "to nowhere"})
	b.refused(401, "unauthenticated", "GET", "/v1/inbox", "", nil)

	// An idempotent retry: the same key and envelope → 200, replayed, the first message.
	env := map[string]any{"kind": "answer", "thread": th3, "body": "Friday works."}
	first := b.must(201, "POST", "/v1/messages", carol, env, "Idempotency-Key", "bb-retry-1")
	retry := b.must(200, "POST", "/v1/messages", carol, env, "Idempotency-Key", "bb-retry-1")
	if retry.get("replayed") != true || retry.str("message.id") != first.str("message.id") || first.get("replayed") != nil {
		t.Fatalf("retry with the same key: first %s, then %s", first.raw, retry.raw)
	}
	if n := b.must(200, "GET", "/v1/threads/"+th3, reader, nil).num("message_count"); n != 2 {
		t.Fatalf("after a replayed retry %s holds %d messages, want 2", th3, n)
	}

	// MCP: the same operations as tools on POST /mcp.
	res := b.mcp(bob, "post", map[string]any{"kind": "ask", "body": "Asked over MCP."})
	sc := bbObject(res["structuredContent"])
	thm, _ := bbField(sc, "thread.id").(string)
	if res["isError"] == true || thm == "" || bbField(sc, "message.from.identity") != bob {
		t.Fatalf("mcp post: %v", res)
	}
	res = b.mcp(alice, "get_thread", map[string]any{"thread": thm})
	if sc := bbObject(res["structuredContent"]); res["isError"] == true || bbField(sc, "id") != thm || bbField(sc, "message_count") != 1.0 {
		t.Fatalf("mcp get_thread: %v", res)
	}
	res = b.mcp(reader, "post", map[string]any{"kind": "ask", "body": "May I, over MCP?"})
	if res["isError"] != true || bbField(res["structuredContent"], "error.reason") != "token_right_missing" {
		t.Fatalf("mcp refusal: %v", res)
	}
	if got := b.must(200, "GET", "/v1/threads/"+thm, reader, nil); got.num("message_count") != 1 || got.str("creator.identity") != bob {
		t.Fatalf("the MCP thread over HTTP: %s", got.raw)
	}

	// 32 concurrent posts on one thread, each by its own (identity,
	// extension) with its own Idempotency-Key, retried on 503 after
	// Retry-After as a client would: each stored exactly once.
	hot := b.must(201, "POST", "/v1/messages", alice, map[string]any{"kind": "ask", "body": "Everyone: what should we name it?"}).str("thread.id")
	type outcome struct {
		msg             string
		status, retries int
		err             error
	}
	outs := make([]outcome, bbPosters)
	var wg sync.WaitGroup
	start := make(chan struct{})
	began := time.Now()
	for i := range bbPosters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			who := fmt.Sprintf("ainotes:p%02d", i/2)
			env := map[string]any{"kind": "answer", "thread": hot, "from": map[string]any{"extension": []string{"a", "b"}[i%2]}, "body": fmt.Sprintf("Name %d.", i)}
			key := fmt.Sprintf("bb-hot-%d", i)
			for attempt := 0; ; attempt++ {
				a, err := b.do("POST", "/v1/messages", who, env, "Idempotency-Key", key)
				if err != nil {
					outs[i] = outcome{err: err}
					return
				}
				if a.status == http.StatusServiceUnavailable && attempt < 20 {
					wait, _ := strconv.Atoi(a.header.Get("Retry-After"))
					time.Sleep(time.Duration(max(wait, 0))*time.Second + 10*time.Millisecond)
					continue
				}
				outs[i] = outcome{msg: a.str("message.id"), status: a.status, retries: attempt}
				if a.status != 201 && !(a.status == 200 && a.get("replayed") == true) {
					outs[i].err = fmt.Errorf("poster %d: %d %s", i, a.status, a.raw)
				}
				return
			}
		}()
	}
	// Meanwhile the moderator moves the thread to a side state and back,
	// so that its event chain interleaves with the posts.
	const rounds = 4
	var modErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for r := range 2 * rounds {
			op, body := "mark", any(map[string]any{"state": "deferred"})
			if r%2 == 1 {
				op, body = "reopen", nil
			}
			for attempt := 0; ; attempt++ {
				a, err := b.do("POST", "/v1/threads/"+hot+"/"+op, mod, body)
				if err == nil && a.status == http.StatusServiceUnavailable && attempt < 20 {
					wait, _ := strconv.Atoi(a.header.Get("Retry-After"))
					time.Sleep(time.Duration(max(wait, 0))*time.Second + 10*time.Millisecond)
					continue
				}
				if err == nil && a.status != 200 {
					err = fmt.Errorf("moderator %s: %d %s", op, a.status, a.raw)
				}
				if err != nil {
					modErr = err
					return
				}
				break
			}
		}
	}()
	close(start)
	wg.Wait()
	took := time.Since(began)
	if modErr != nil {
		t.Fatal(modErr)
	}
	ids := map[string]int{}
	retries, replayed := 0, 0
	for i, o := range outs {
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.msg == "" {
			t.Fatalf("poster %d got no message id", i)
		}
		ids[o.msg]++
		retries += o.retries
		if o.status == 200 {
			replayed++
		}
	}
	if len(ids) != bbPosters {
		t.Fatalf("%d posts got %d distinct message ids: %v", bbPosters, len(ids), ids)
	}
	hotRead := b.must(200, "GET", "/v1/threads/"+hot, reader, nil)
	stored := map[string]int{}
	for _, m := range bbMessages(hotRead.list("messages")) {
		stored[m["id"].(string)]++
	}
	if hotRead.num("message_count") != bbPosters+1 || len(stored) != bbPosters+1 {
		t.Fatalf("%s: message_count %d, %d messages read, want %d", hot, hotRead.num("message_count"), len(stored), bbPosters+1)
	}
	for id := range ids {
		if stored[id] != 1 {
			t.Fatalf("%s: post %s stored %d times", hot, id, stored[id])
		}
	}
	// Every change bumped the version once: the ask, the posts and the
	// moderator's operations; each state change left one event, chained.
	hotEvents := b.chain(hot)
	if v := hotRead.num("version"); v != 1+bbPosters+2*rounds {
		t.Fatalf("%s: version %d after the ask, %d posts and %d operations", hot, v, bbPosters, 2*rounds)
	}
	ops := 0
	for _, e := range hotEvents {
		if c := bbField(e, "cause"); c == "mark" || c == "reopen" {
			ops++
		}
	}
	// (An answer moves the thread open → answered only when it finds it
	// open; how many did depends on the interleaving.)
	if ops != 2*rounds || len(hotEvents) < 1+2*rounds || int(bbField(hotEvents[len(hotEvents)-1], "seq").(float64)) > hotRead.num("version") {
		t.Fatalf("%s: %d events (%d by the moderator's %d operations): %v", hot, len(hotEvents), ops, 2*rounds, hotEvents)
	}
	t.Logf("%d concurrent posts on %s (with %d state changes) in %v: %d retried after 503, %d replayed, each stored once; %d events chained",
		bbPosters, hot, 2*rounds, took.Round(time.Millisecond), retries, replayed, len(hotEvents))
}
