// Package smoke runs a short conversation against a running Parley — a
// deployed stack or a local server — over HTTP and MCP, printing each step
// and stopping at the first surprise. `parley smoke --url URL --token TOKEN`
// (and `make smoke URL=… TOKEN=…`) run it; its test runs it against the
// local server so that it cannot rot.
//
// It needs one human token. With it, it mints two agent tokens (create_token),
// lets them ask, answer and decide, finds the proposal in the review queue,
// confirms it, reads the thread, the inbox and the events, provokes three
// refusals (self_reply, token_right_missing, invalid_body), checks that an
// Idempotency-Key with a comma is taken whole and that unknown routes get
// Parley's own JSON answers, speaks MCP (initialize, tools/list, tools/call
// post and a refused tool call), and revokes both agent tokens — also when a
// step failed.
//
// It leaves one thread behind (there is no delete), titled "smoke <run id>".
package smoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Options tune a run; the zero value is what Run uses.
type Options struct {
	// Client makes the requests; nil is a client with a 30 s timeout.
	Client *http.Client
	// Settle bounds how long a step waits for what DynamoDB's indexes show
	// eventually (the queue, the inbox); zero is 20 s.
	Settle time.Duration
}

// Run runs the conversation against baseURL (e.g. https://abc.execute-api.
// eu-west-1.amazonaws.com, or http://127.0.0.1:8080) with a human's token,
// writing one line per step to out. It returns the first surprise.
func Run(ctx context.Context, baseURL, token string, out io.Writer) error {
	return RunWith(ctx, baseURL, token, out, Options{})
}

// RunWith is Run with options.
func RunWith(ctx context.Context, baseURL, token string, out io.Writer, o Options) (err error) {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Settle <= 0 {
		o.Settle = 20 * time.Second
	}
	u, perr := url.Parse(strings.TrimRight(baseURL, "/"))
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("smoke: %q is not an http(s) URL", baseURL)
	}
	if token == "" {
		return errors.New("smoke: a human's token is required (parley token create --identity human:you …)")
	}
	var id [3]byte
	_, _ = rand.Read(id[:])
	s := &run{ctx: ctx, base: u.String(), human: token, out: out, o: o, id: hex.EncodeToString(id[:])}
	fmt.Fprintf(out, "smoke %s against %s\n", s.id, s.base)
	defer func() {
		if cerr := s.cleanup(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(out, "FAIL %v\n", err)
		} else {
			fmt.Fprintf(out, "PASS %d steps\n", s.steps)
		}
	}()
	return s.conversation()
}

type run struct {
	ctx     context.Context
	base    string
	human   string
	out     io.Writer
	o       Options
	id      string
	steps   int
	minted  []string // token ids to revoke
	realm   string
	a, b    string // the agents' secrets
	aID     string // their identities
	bID     string
	thread  string
	ask     string // the ask's message id
	mcpNext int
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r reply) reason() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["reason"].(string)
	return s
}

// call makes one HTTP request; body is marshalled unless it is []byte.
func (s *run) call(method, path, token string, body any, header map[string]string) (reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(s.ctx, method, s.base+path, rd)
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Accept", "application/json")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := s.o.Client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	r := reply{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r, nil
}

// step runs one request and checks its status (and optional refusal
// reason), printing the outcome; check may look closer.
func (s *run) step(name, method, path, token string, body any, header map[string]string, status int, reason string, check func(reply) error) (reply, error) {
	start := time.Now()
	r, err := s.call(method, path, token, body, header)
	if err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	if r.status != status {
		return r, fmt.Errorf("%s: %s %s answered %d, want %d: %s", name, method, path, r.status, status, clip(r.raw))
	}
	if reason != "" && r.reason() != reason {
		return r, fmt.Errorf("%s: %s %s refused with %q, want %q: %s", name, method, path, r.reason(), reason, clip(r.raw))
	}
	if check != nil {
		if err := check(r); err != nil {
			return r, fmt.Errorf("%s: %w: %s", name, err, clip(r.raw))
		}
	}
	s.ok(name, fmt.Sprintf("%d", r.status), time.Since(start))
	return r, nil
}

func (s *run) ok(name, what string, d time.Duration) {
	s.steps++
	fmt.Fprintf(s.out, "ok   %-34s %s  %s\n", name, what, d.Round(time.Millisecond))
}

// eventually repeats a read until check passes or the settle time is up:
// the queue and the inbox are read from DynamoDB indexes, which lag their
// table by a little.
func (s *run) eventually(name, path, token string, check func(reply) error) error {
	start := time.Now()
	deadline := start.Add(s.o.Settle)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		r, err := s.call("GET", path, token, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		var cerr error
		if r.status != http.StatusOK {
			cerr = fmt.Errorf("GET %s answered %d", path, r.status)
		} else {
			cerr = check(r)
		}
		if cerr == nil {
			s.ok(name, "200", time.Since(start))
			return nil
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%s: after %s: %w: %s", name, s.o.Settle, cerr, clip(r.raw))
		}
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-time.After(wait):
		}
	}
}

func clip(raw []byte) string {
	const n = 400
	if len(raw) > n {
		return string(raw[:n]) + "…"
	}
	return string(raw)
}

func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

func (s *run) conversation() error {
	// Public: the manifest, no token.
	r, err := s.step("manifest", "GET", "/v1/manifest", "", nil, nil, 200, "", func(r reply) error {
		if r.body["parley"] != "1" {
			return errors.New(`not a Parley manifest ("parley": "1")`)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.realm = str(r.body, "realm")
	if _, err := s.step("whoami (human)", "GET", "/v1/whoami", s.human, nil, nil, 200, "", func(r reply) error {
		if id := str(r.body, "identity"); !strings.HasPrefix(id, "human:") {
			return fmt.Errorf("the token is %s's; smoke needs a human's (it mints agent tokens)", id)
		}
		return nil
	}); err != nil {
		return err
	}

	// Two agents, minted with the human's token.
	mint := func(name, handle string) (secret, identity string, err error) {
		r, err := s.step(name, "POST", "/v1/tokens", s.human,
			map[string]any{"identity": s.realm + ":" + handle, "rights": []string{"read", "write"}, "label": ""}, nil, 201, "", func(r reply) error {
				if !strings.HasPrefix(str(r.body, "id"), "tk_") || str(r.body, "secret") == "" {
					return errors.New("no token id and secret")
				}
				return nil
			})
		if err != nil {
			return "", "", err
		}
		s.minted = append(s.minted, str(r.body, "id"))
		return str(r.body, "secret"), str(r.body, "identity"), nil
	}
	if s.a, s.aID, err = mint("create_token (agent a)", "smoke-a-"+s.id); err != nil {
		return err
	}
	if s.b, s.bID, err = mint("create_token (agent b)", "smoke-b-"+s.id); err != nil {
		return err
	}

	// ask → answer → decide (a model's decide is a proposal).
	r, err = s.step("post ask (a)", "POST", "/v1/messages", s.a,
		map[string]any{"kind": "ask", "body": "smoke " + s.id + ": is this deployment alive?", "from": map[string]any{"extension": "asker"}}, nil, 201, "", func(r reply) error {
			if str(r.body, "thread", "id") == "" || str(r.body, "thread", "state") != "open" {
				return errors.New("no open thread")
			}
			if loc := r.header.Get("Location"); loc != "/v1/threads/"+str(r.body, "thread", "id") {
				return fmt.Errorf("Location %q", loc)
			}
			return nil
		})
	if err != nil {
		return err
	}
	s.thread, s.ask = str(r.body, "thread", "id"), str(r.body, "message", "id")
	if _, err := s.step("post answer (b)", "POST", "/v1/messages", s.b,
		map[string]any{"kind": "answer", "thread": s.thread, "body": "It answers."}, nil, 201, "", func(r reply) error {
			if str(r.body, "thread", "state") != "answered" {
				return fmt.Errorf("state %q after an answer", str(r.body, "thread", "state"))
			}
			return nil
		}); err != nil {
		return err
	}
	if err := s.eventually("inbox (a) shows the answer", "/v1/inbox", s.a, func(r reply) error {
		return hasThread(r, s.thread)
	}); err != nil {
		return err
	}
	if _, err := s.step("post decide (a)", "POST", "/v1/messages", s.a,
		map[string]any{"kind": "decide", "thread": s.thread, "body": "Alive, then."}, nil, 201, "", func(r reply) error {
			if str(r.body, "thread", "state") != "decided" || r.body["thread"].(map[string]any)["proposal"] != true {
				return errors.New("not a decided proposal")
			}
			return nil
		}); err != nil {
		return err
	}
	if err := s.eventually("queue shows the proposal", "/v1/queue", s.human, func(r reply) error {
		if err := hasThread(r, s.thread); err != nil {
			return err
		}
		for _, e := range r.body["threads"].([]any) {
			if em := e.(map[string]any); em["id"] == s.thread && em["why"] != "proposal" {
				return fmt.Errorf("queued as %v", em["why"])
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.step("confirm (human)", "POST", "/v1/threads/"+s.thread+"/confirm", s.human,
		map[string]any{"state": "decided"}, nil, 200, "", func(r reply) error {
			if r.body["proposal"] != false || str(r.body, "state") != "decided" {
				return errors.New("not a confirmed decided")
			}
			return nil
		}); err != nil {
		return err
	}
	if _, err := s.step("get_thread", "GET", "/v1/threads/"+s.thread, s.b, nil, nil, 200, "", func(r reply) error {
		msgs, _ := r.body["messages"].([]any)
		if str(r.body, "state") != "decided" || r.body["proposal"] != false || len(msgs) == 0 {
			return errors.New("not the confirmed thread with its messages")
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.step("events of the thread", "GET", "/v1/events?thread="+s.thread, s.b, nil, nil, 200, "", func(r reply) error {
		var to []string
		for _, e := range r.body["events"].([]any) {
			to = append(to, fmt.Sprint(e.(map[string]any)["to"]))
		}
		if !slices.Contains(to, "answered") || !slices.Contains(to, "decided") {
			return fmt.Errorf("events to %v", to)
		}
		return nil
	}); err != nil {
		return err
	}

	// An Idempotency-Key with a comma is one key: a retry replays, another
	// key posts anew.
	key := "smoke-" + s.id + ", attempt 1"
	inform := map[string]any{"kind": "inform", "thread": s.thread, "body": "Retried safely."}
	first, err := s.step("post with Idempotency-Key", "POST", "/v1/messages", s.b, inform, map[string]string{"Idempotency-Key": key}, 201, "", nil)
	if err != nil {
		return err
	}
	if _, err := s.step("the same key replays", "POST", "/v1/messages", s.b, inform, map[string]string{"Idempotency-Key": key}, 200, "", func(r reply) error {
		if str(r.body, "message", "id") != str(first.body, "message", "id") {
			return errors.New("a different message: the key was not taken whole")
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.step("a key differing after the comma", "POST", "/v1/messages", s.b,
		map[string]any{"kind": "inform", "thread": s.thread, "body": "Retried safely, twice."}, map[string]string{"Idempotency-Key": "smoke-" + s.id + ", attempt 2"}, 201, "", func(r reply) error {
			if str(r.body, "message", "id") == str(first.body, "message", "id") {
				return errors.New("the same message: the key was cut at the comma")
			}
			return nil
		}); err != nil {
		return err
	}

	// Refusals.
	if _, err := s.step("refusal: self_reply", "POST", "/v1/messages", s.a,
		map[string]any{"kind": "clarify", "thread": s.thread, "parent": s.ask, "body": "Talking to myself.", "from": map[string]any{"extension": "asker"}}, nil, 409, "self_reply", nil); err != nil {
		return err
	}
	if _, err := s.step("refusal: token_right_missing", "GET", "/v1/queue", s.a, nil, nil, 403, "token_right_missing", nil); err != nil {
		return err
	}
	if _, err := s.step("refusal: invalid_body", "POST", "/v1/messages", s.a, map[string]any{"kind": "ask", "body": "x", "colour": "blue"}, nil, 400, "invalid_body", nil); err != nil {
		return err
	}
	if _, err := s.step("unknown route: JSON 404", "GET", "/v1/nowhere-"+s.id, s.a, nil, nil, 404, "not_found", nil); err != nil {
		return err
	}
	if _, err := s.step("wrong method: 405 with Allow", "PUT", "/v1/messages", s.a, nil, nil, 405, "method_not_allowed", func(r reply) error {
		if r.header.Get("Allow") != "POST" {
			return fmt.Errorf("Allow %q", r.header.Get("Allow"))
		}
		return nil
	}); err != nil {
		return err
	}

	return s.mcp()
}

func hasThread(r reply, id string) error {
	for _, e := range toList(r.body["threads"]) {
		if m, _ := e.(map[string]any); m["id"] == id {
			return nil
		}
	}
	return fmt.Errorf("%s is not listed", id)
}

func toList(v any) []any {
	l, _ := v.([]any)
	return l
}

// rpc sends one JSON-RPC request to /mcp and returns its result.
func (s *run) rpc(name, token, method string, params any, check func(result map[string]any) error) (map[string]any, error) {
	s.mcpNext++
	var result map[string]any
	_, err := s.step(name, "POST", "/mcp", token,
		map[string]any{"jsonrpc": "2.0", "id": s.mcpNext, "method": method, "params": params},
		map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}, 200, "",
		func(r reply) error {
			if e, ok := r.body["error"]; ok {
				return fmt.Errorf("JSON-RPC error %v", e)
			}
			result, _ = r.body["result"].(map[string]any)
			if result == nil {
				return errors.New("no result")
			}
			if check != nil {
				return check(result)
			}
			return nil
		})
	return result, err
}

func (s *run) mcp() error {
	if _, err := s.rpc("mcp initialize", s.b, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "parley-smoke", "version": "1"},
	}, func(res map[string]any) error {
		if _, ok := res["serverInfo"]; !ok {
			return errors.New("no serverInfo")
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.rpc("mcp tools/list", s.b, "tools/list", map[string]any{}, func(res map[string]any) error {
		var names []string
		for _, tl := range toList(res["tools"]) {
			names = append(names, str(tl.(map[string]any), "name"))
		}
		for _, want := range []string{"get_manifest", "post", "get_thread", "inbox"} {
			if !slices.Contains(names, want) {
				return fmt.Errorf("no %s tool among %v", want, names)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.rpc("mcp tools/call post", s.b, "tools/call", map[string]any{"name": "post", "arguments": map[string]any{
		"kind": "inform", "thread": s.thread, "body": "Also over MCP.",
	}}, func(res map[string]any) error {
		sc, _ := res["structuredContent"].(map[string]any)
		if res["isError"] == true || str(sc, "message", "from", "identity") != s.bID {
			return errors.New("not posted as agent b")
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.rpc("mcp refusal (isError, reason)", s.b, "tools/call", map[string]any{"name": "queue", "arguments": map[string]any{}}, func(res map[string]any) error {
		sc, _ := res["structuredContent"].(map[string]any)
		if res["isError"] != true || str(sc, "error", "reason") != "token_right_missing" {
			return errors.New("not a token_right_missing tool error")
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.step("mcp GET: 405 with Allow", "GET", "/mcp", s.b, nil, map[string]string{"Accept": "text/event-stream"}, 405, "", func(r reply) error {
		if r.header.Get("Allow") != "POST" {
			return fmt.Errorf("Allow %q", r.header.Get("Allow"))
		}
		return nil
	}); err != nil {
		return err
	}
	return nil
}

// cleanup revokes the agent tokens this run minted, whatever happened.
func (s *run) cleanup() error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), time.Minute)
	defer cancel()
	s.ctx = ctx
	var errs []error
	for _, id := range s.minted {
		if _, err := s.step("revoke_token "+id, "DELETE", "/v1/tokens/"+id, s.human, nil, nil, 200, "", func(r reply) error {
			if r.body["revoked_at"] == nil {
				return errors.New("not revoked")
			}
			return nil
		}); err != nil {
			errs = append(errs, err)
		}
	}
	s.minted = nil
	return errors.Join(errs...)
}
