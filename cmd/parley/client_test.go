package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/instance"
	"github.com/ainotes/parley/infra/testenv"
)

// The client commands against a running `parley serve` (in-process, the
// embedded store, the demo tokens it prints).

// isolate points the user's configuration directory at a temporary one
// and clears the login variables, so no test reads or writes the real
// login.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv(envURL, "")
	t.Setenv(envToken, "")
	dir, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "parley", "config.json")
}

type clientEnv struct {
	t     *testing.T
	base  string
	tok   map[string]string // alice, bob, mod, hana
	cfg   string            // where login saves
	trans *recorder
}

func newClientEnv(t *testing.T, serveArgs ...string) *clientEnv {
	t.Helper()
	cfg := isolate(t)
	base, out := startServe(t, serveArgs...)
	e := &clientEnv{t: t, base: base, tok: map[string]string{}, cfg: cfg, trans: &recorder{}}
	for _, m := range regexp.MustCompile(`(?m)^\s+(\S+):(alice|bob|mod|hana)\s+\S+\s+(pt_[a-z0-9]+)`).FindAllStringSubmatch(out.String(), -1) {
		e.tok[m[2]] = m[3]
	}
	if len(e.tok) != 4 {
		t.Fatalf("demo tokens: %v in %s", e.tok, out.String())
	}
	return e
}

// cli is a client as who ("" for none: the saved login), talking to the
// server through the recording transport.
func (e *clientEnv) cli(who, stdin string, stdout, stderr io.Writer) *cli {
	c := newCLI(stdout, stderr)
	c.stdin = strings.NewReader(stdin)
	c.http = &http.Client{Transport: e.trans, Timeout: 30 * time.Second}
	c.every = 20 * time.Millisecond
	if who != "" {
		c.getenv = func(k string) string {
			switch k {
			case envURL:
				return e.base
			case envToken:
				if tok, ok := e.tok[who]; ok {
					return tok
				}
				return who // a secret itself
			}
			return os.Getenv(k)
		}
	}
	return c
}

// run runs one command line as who and returns its exit code, stdout and
// stderr.
func (e *clientEnv) run(who string, args ...string) (int, string, string) {
	return e.runIn(who, "", args...)
}

func (e *clientEnv) runIn(who, stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	var out, errb bytes.Buffer
	code := e.cli(who, stdin, &out, &errb).run(context.Background(), args)
	return code, out.String(), errb.String()
}

// ok runs a command that must succeed.
func (e *clientEnv) ok(who string, args ...string) string {
	e.t.Helper()
	code, out, errOut := e.run(who, args...)
	if code != 0 {
		e.t.Fatalf("parley %s (as %s): exit %d\n%s%s", strings.Join(args, " "), who, code, out, errOut)
	}
	return out
}

// api calls the HTTP API directly, for comparison.
func (e *clientEnv) api(who, method, path, body string) map[string]any {
	e.t.Helper()
	status, m := call(e.t, method, e.base+path, e.tok[who], body)
	if status/100 != 2 {
		e.t.Fatalf("%s %s: %d %v", method, path, status, m)
	}
	return m
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	if err := d.Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	if d.More() {
		t.Fatalf("more than one JSON document:\n%s", s)
	}
	return m
}

// recorder is a transport that remembers every request's method, path and
// body.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.Path+" "+string(body))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) find(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.reqs {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func TestClientLogin(t *testing.T) {
	e := newClientEnv(t)
	// A bad token: refused, nothing saved.
	code, _, errOut := e.runIn("", "pt_not_a_token_at_all_0000", "login", e.base, "--token-stdin")
	if code != 1 || !strings.Contains(errOut, "parley: unauthenticated:") {
		t.Fatalf("login with a bad token: %d %q", code, errOut)
	}
	if _, err := os.Stat(e.cfg); !os.IsNotExist(err) {
		t.Fatalf("a refused login saved %s: %v", e.cfg, err)
	}
	code, out, errOut := e.runIn("", e.tok["alice"]+"\n", "login", e.base+"/", "--token-stdin")
	if code != 0 || !strings.Contains(out, "as ainotes:alice") || !strings.Contains(out, e.cfg) {
		t.Fatalf("login: %d %q %q", code, out, errOut)
	}
	fi, err := os.Stat(e.cfg)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file %s: %v %v", e.cfg, fi.Mode(), err)
	}
	if di, err := os.Stat(filepath.Dir(e.cfg)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("config directory: %v %v", di.Mode(), err)
	}
	raw, _ := os.ReadFile(e.cfg)
	var saved savedLogin
	if err := json.Unmarshal(raw, &saved); err != nil || saved.URL != e.base || saved.Token != e.tok["alice"] {
		t.Fatalf("saved %s: %+v %v", raw, saved, err)
	}
	// The saved login is used.
	if out := e.ok("", "whoami"); !strings.Contains(out, "ainotes:alice") || !strings.Contains(out, e.base) {
		t.Fatalf("whoami: %q", out)
	}
	// PARLEY_TOKEN and PARLEY_URL override it (the process environment).
	t.Setenv(envToken, e.tok["bob"])
	if out := e.ok("", "whoami"); !strings.Contains(out, "ainotes:bob") {
		t.Fatalf("PARLEY_TOKEN did not override: %q", out)
	}
	t.Setenv(envURL, "http://127.0.0.1:1")
	if code, _, errOut := e.run("", "whoami"); code != 1 || !strings.Contains(errOut, "cannot reach http://127.0.0.1:1") {
		t.Fatalf("PARLEY_URL did not override, or no network error: %d %q", code, errOut)
	}
	t.Setenv(envURL, "")
	t.Setenv(envToken, "")
	// Without --token-stdin a line is read from stdin (not a terminal here).
	code, out, _ = e.runIn("", e.tok["mod"]+"\nrest\n", "--json", "login", e.base)
	if code != 0 || decode(t, out)["identity"] != "ainotes:mod" {
		t.Fatalf("login --json from a line: %d %q", code, out)
	}
	if out := e.ok("", "whoami", "--json"); decode(t, out)["label"] != "mod" {
		t.Fatalf("whoami after the second login: %q", out)
	}
	if out := e.ok("", "logout"); !strings.Contains(out, "removed "+e.cfg) {
		t.Fatalf("logout: %q", out)
	}
	if _, err := os.Stat(e.cfg); !os.IsNotExist(err) {
		t.Fatalf("logout left %s", e.cfg)
	}
	if code, _, errOut := e.run("", "whoami"); code != 2 || !strings.Contains(errOut, "not logged in") {
		t.Fatalf("whoami logged out: %d %q", code, errOut)
	}
}

func TestClientThreadTree(t *testing.T) {
	e := newClientEnv(t)
	out := e.ok("alice", "ask", "What should we call the first release?")
	if !strings.Contains(out, "opened th_1") || !strings.Contains(out, "awaiting  anyone but ainotes:alice") {
		t.Fatalf("ask: %q", out)
	}
	out = e.ok("bob", "answer", "th_1", "--extension", "x", "Parley", "1.0")
	if !strings.Contains(out, "answered (proposal by ainotes:bob)") || !strings.Contains(out, "awaiting  ainotes:alice") {
		t.Fatalf("answer: %q", out)
	}
	answer := regexp.MustCompile(`posted (msg_\d+)`).FindStringSubmatch(out)[1]
	// The body from stdin, as a reply to the answer.
	code, out, errOut := e.runIn("alice", "Why not\n1.0?\n", "post", "clarify", "--thread", "th_1", "--parent", answer, "-")
	if code != 0 || !strings.Contains(out, "[clarify]") {
		t.Fatalf("post from stdin: %d %q %q", code, out, errOut)
	}
	clarify := regexp.MustCompile(`posted (msg_\d+)`).FindStringSubmatch(out)[1]
	e.ok("mod", "decide", "th_1", "--parent", clarify, "Parley 1.0 it is")

	out = e.ok("alice", "thread", "th_1")
	for _, want := range []string{
		"th_1  What should we call the first release?",
		"state     decided (confirmed by ainotes:mod · KI · mod)",
		"awaiting  nobody",
		"\n[ask] ainotes:alice  msg_",
		"\n    [answer] ainotes:bob/x  " + answer,
		"→ answered (proposal)",
		"\n      Parley 1.0\n",
		"\n        [clarify] ainotes:alice  " + clarify,
		"\n          Why not\n          1.0?\n",
		"\n            [decide] ainotes:mod · KI · mod  msg_",
		"→ decided (confirmed)",
		"state history:",
		"open → answered  proposal by ainotes:bob",
		"answered → decided  confirmed by ainotes:mod · KI · mod",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("thread lacks %q:\n%s", want, out)
		}
	}
	// --json is the API's document.
	got := decode(t, e.ok("alice", "thread", "th_1", "--json"))
	if want := e.api("alice", "GET", "/v1/threads/th_1", ""); !reflect.DeepEqual(got, want) {
		t.Fatalf("thread --json:\n%v\nthe API:\n%v", got, want)
	}
	// Lists.
	e.ok("bob", "ask", "A second question")
	out = e.ok("alice", "threads")
	if !regexp.MustCompile(`THREAD\s+STATE\s+AWAITING\s+MSGS\s+UPDATED\s+TITLE\n`).MatchString(out) ||
		!regexp.MustCompile(`th_2\s+open\s+anyone but ainotes:bob\s+1\s`).MatchString(out) ||
		!regexp.MustCompile(`th_1\s+decided \(KI · mod\)\s+nobody\s+4\s`).MatchString(out) {
		t.Fatalf("threads:\n%s", out)
	}
	out = e.ok("alice", "threads", "--state", "decided")
	if strings.Contains(out, "th_2") || !strings.Contains(out, "th_1") {
		t.Fatalf("threads --state decided:\n%s", out)
	}
	got = decode(t, e.ok("alice", "threads", "--json", "--limit", "1"))
	if want := e.api("alice", "GET", "/v1/threads?limit=1", ""); !reflect.DeepEqual(got, want) || got["cursor"] == nil {
		t.Fatalf("threads --json:\n%v\n%v", got, want)
	}
	cursor := got["cursor"].(string)
	if out := e.ok("alice", "threads", "--limit", "1", "--cursor", cursor); !strings.Contains(out, "th_1") || strings.Contains(out, "th_2") {
		t.Fatalf("threads --cursor:\n%s", out)
	}
	if code, _, errOut := e.run("alice", "thread", "th_99"); code != 1 || !strings.Contains(errOut, "parley: thread_not_found:") {
		t.Fatalf("a missing thread: %d %q", code, errOut)
	}
}

func TestClientRefusals(t *testing.T) {
	e := newClientEnv(t)
	out := e.ok("alice", "ask", "Is this mine?")
	root := regexp.MustCompile(`(msg_\d+)`).FindString(out)
	// Replying to one's own message: self_reply, with its detail.
	code, out, errOut := e.run("alice", "inform", "th_1", "--parent", root, "yes")
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "parley: self_reply: ") || !strings.Contains(errOut, "  parent: "+root) {
		t.Fatalf("self_reply: %d %q %q", code, out, errOut)
	}
	// --json: the API's error object on stdout too.
	code, out, errOut = e.run("alice", "--json", "inform", "th_1", "--parent", root, "yes")
	if code != 1 || !strings.Contains(errOut, "self_reply") {
		t.Fatalf("self_reply --json: %d %q", code, errOut)
	}
	if m := decode(t, out); m["error"].(map[string]any)["reason"] != "self_reply" {
		t.Fatalf("self_reply --json stdout: %q", out)
	}
	// A reader posting: token_right_missing.
	out = e.ok("hana", "token", "create", "--identity", "ainotes:reader", "--rights", "read")
	reader := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	code, _, errOut = e.run(reader, "answer", "th_1", "no")
	if code != 1 || !strings.HasPrefix(errOut, "parley: token_right_missing: ") {
		t.Fatalf("reader posting: %d %q", code, errOut)
	}
	// Unknown kinds, bad ids, a body missing, a thread missing.
	if code, _, errOut := e.run("alice", "post", "shout", "--thread", "th_1", "hi"); code != 1 || !strings.Contains(errOut, "parley: invalid_body:") || !strings.Contains(errOut, "field: kind") {
		t.Fatalf("unknown kind: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("alice", "mark", "th_x", "decided"); code != 1 || !strings.Contains(errOut, "invalid_body") {
		t.Fatalf("a malformed thread id: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("alice", "answer", "th_1"); code != 2 || !strings.Contains(errOut, "usage: parley answer") {
		t.Fatalf("no body: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("alice", "mark", "th_1"); code != 2 || !strings.Contains(errOut, "usage: parley mark th_N STATE") {
		t.Fatalf("mark without a state: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("alice", "threads", "--bogus"); code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Fatalf("an unknown flag: %d %q", code, errOut)
	}
	// Authority: bob may not decide alice's thread; alice's queue needs lock.
	if code, _, errOut := e.run("bob", "decide", "th_1", "mine"); code != 1 || !strings.Contains(errOut, "parley: thread_authority_missing:") {
		t.Fatalf("bob deciding: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("alice", "queue"); code != 1 || !strings.Contains(errOut, "parley: token_right_missing:") {
		t.Fatalf("alice's queue: %d %q", code, errOut)
	}
	// A network error.
	c := e.cli("alice", "", io.Discard, io.Discard)
	var errb bytes.Buffer
	c.stderr = &errb
	getenv := c.getenv
	c.getenv = func(k string) string {
		if k == envURL {
			return "http://127.0.0.1:1"
		}
		return getenv(k)
	}
	if code := c.run(context.Background(), []string{"inbox"}); code != 1 || !strings.HasPrefix(errb.String(), "parley: cannot reach http://127.0.0.1:1: ") {
		t.Fatalf("network error: %d %q", code, errb.String())
	}
}

// TestClientRateLimited: rate_limited says when to retry.
func TestClientRateLimited(t *testing.T) {
	e := newClientEnv(t, "--rate-limit", "1")
	e.ok("alice", "ask", "one")
	code, _, errOut := e.run("alice", "ask", "two")
	if code != 1 || !strings.HasPrefix(errOut, "parley: rate_limited: ") || !regexp.MustCompile(`retry after \d+ s \(Retry-After\)`).MatchString(errOut) {
		t.Fatalf("rate limited: %d %q", code, errOut)
	}
}

// TestClientConfirmSendsTheStateSeen: confirm reads the proposal, shows it
// and confirms that state; a stale state confirms nothing.
func TestClientConfirmSendsTheStateSeen(t *testing.T) {
	e := newClientEnv(t)
	e.ok("alice", "ask", "Ship it?")
	answer := regexp.MustCompile(`posted (msg_\d+)`).FindStringSubmatch(e.ok("bob", "answer", "th_1", "Yes"))[1]
	out := e.ok("mod", "confirm", "th_1")
	if !strings.Contains(out, "th_1  seen: answered (proposal by ainotes:bob)") || !strings.Contains(out, "th_1  answered (confirmed by ainotes:mod · KI · mod)") {
		t.Fatalf("confirm: %q", out)
	}
	if sent := e.trans.find("POST /v1/threads/th_1/confirm "); len(sent) != 1 || !strings.HasSuffix(sent[0], `{"state":"answered"}`) {
		t.Fatalf("confirm sent %q", sent)
	}
	// A model's decide is a proposal; confirming another state than the
	// proposal confirms nothing.
	e.ok("alice", "ask", "Ship it now?")
	answer = regexp.MustCompile(`posted (msg_\d+)`).FindStringSubmatch(e.ok("bob", "answer", "th_2", "Yes, now"))[1]
	e.ok("alice", "decide", "th_2", "--parent", answer, "Shipping")
	code, _, errOut := e.run("mod", "confirm", "th_2", "closed")
	if code != 1 || !strings.Contains(errOut, "parley: invalid_transition:") {
		t.Fatalf("confirm of a state not proposed: %d %q", code, errOut)
	}
	got := decode(t, e.ok("hana", "confirm", "th_2", "--json"))
	if got["state"] != "decided" || got["proposal"] != false || got["state_by"] != "human:hana" {
		t.Fatalf("confirm --json: %v", got)
	}
	if sent := e.trans.find("POST /v1/threads/th_2/confirm "); len(sent) != 2 || !strings.HasSuffix(sent[1], `{"state":"decided"}`) {
		t.Fatalf("confirm sent %q", sent)
	}
	// Nothing left to confirm: the server says so.
	if code, _, errOut := e.run("hana", "confirm", "th_1"); code != 1 || !strings.Contains(errOut, "invalid_transition") {
		t.Fatalf("confirm without a proposal: %d %q", code, errOut)
	}
	// mark and reopen.
	out = e.ok("hana", "mark", "th_1", "closed")
	if !strings.Contains(out, "th_1  closed (confirmed by human:hana)") {
		t.Fatalf("mark: %q", out)
	}
	if code, _, errOut := e.run("bob", "inform", "th_1", "late"); code != 1 || !strings.Contains(errOut, "thread_closed") {
		t.Fatalf("posting to a closed thread: %d %q", code, errOut)
	}
	out = e.ok("hana", "reopen", "th_1")
	if !strings.Contains(out, "th_1  open (confirmed by human:hana)") || !strings.Contains(out, "awaiting  anyone but human:hana") {
		t.Fatalf("reopen: %q", out)
	}
	out = e.ok("alice", "events", "--thread", "th_1")
	for _, want := range []string{"#1", "open  confirmed by ainotes:alice", "answered  confirmed by ainotes:mod · KI · mod  (confirm)", "answered → closed  confirmed by human:hana  (mark)", "closed → open  confirmed by human:hana  (reopen)", "parley events --since "} {
		if !strings.Contains(out, want) {
			t.Fatalf("events lack %q:\n%s", want, out)
		}
	}
	got = decode(t, e.ok("alice", "events", "--thread", "th_1", "--json"))
	want := e.api("alice", "GET", "/v1/events?thread=th_1", "")
	if !reflect.DeepEqual(got["events"], want["events"]) || got["cursor"] == "" {
		t.Fatalf("events --json:\n%v\n%v", got, want)
	}
}

// TestClientReadCommands: inbox, queue, claims, whoami, manifest; each
// human form and its --json, which is the API's.
func TestClientReadCommands(t *testing.T) {
	e := newClientEnv(t)
	e.ok("alice", "ask", "Who reviews #42?")
	e.ok("bob", "escalate", "th_1", "We need a human here")
	e.ok("alice", "ask", "Open call")
	out := e.ok("hana", "inbox")
	if !regexp.MustCompile(`th_1\s+open\s+a human\s`).MatchString(out) || !regexp.MustCompile(`th_2\s+open\s+anyone but ainotes:alice`).MatchString(out) {
		t.Fatalf("hana's inbox:\n%s", out)
	}
	if out := e.ok("alice", "inbox"); !strings.Contains(out, "Nothing awaits you.") {
		t.Fatalf("alice's inbox:\n%s", out)
	}
	got := decode(t, e.ok("hana", "inbox", "--json"))
	if want := e.api("hana", "GET", "/v1/inbox", ""); !reflect.DeepEqual(got["threads"], want["threads"]) {
		t.Fatalf("inbox --json:\n%v\n%v", got, want)
	}
	out = e.ok("mod", "queue")
	if !regexp.MustCompile(`th_1\s+escalated\s+open \(set by ainotes:alice\)\s+.*\[escalate\] ainotes:bob: We need a human here`).MatchString(out) {
		t.Fatalf("queue:\n%s", out)
	}
	got = decode(t, e.ok("hana", "queue", "--json"))
	if want := e.api("hana", "GET", "/v1/queue", ""); !reflect.DeepEqual(got, want) {
		t.Fatalf("queue --json:\n%v\n%v", got, want)
	}
	// Claims (dialectic): evidence flags, claim and claims.
	out = e.ok("alice", "assert", "CI is green on main", "--evidence", "url=https://ci.example/run/7::the passing run", "--evidence", "hash=sha256:abc123")
	if !strings.Contains(out, "claim     cl_1 unverified") {
		t.Fatalf("assert: %q", out)
	}
	if sent := e.trans.find("POST /v1/messages "); !strings.Contains(sent[len(sent)-1], `"evidence":[{"kind":"url","ref":"https://ci.example/run/7","note":"the passing run"},{"kind":"hash","ref":"sha256:abc123"}]`) {
		t.Fatalf("assert sent %q", sent[len(sent)-1])
	}
	out = e.ok("bob", "attest", "cl_1", "--evidence", `{"kind":"log","ref":"ci.log","note":"line 3"}`, "Confirmed")
	if !strings.Contains(out, "claim     cl_1 supported") {
		t.Fatalf("attest: %q", out)
	}
	out = e.ok("alice", "claim", "cl_1")
	for _, want := range []string{"cl_1  supported", "CI is green on main", "evidence  url https://ci.example/run/7 — the passing run", "evidence  hash sha256:abc123", "[attest] ainotes:bob  unverified → supported", "evidence  log ci.log — line 3"} {
		if !strings.Contains(out, want) {
			t.Fatalf("claim lacks %q:\n%s", want, out)
		}
	}
	got = decode(t, e.ok("alice", "claim", "cl_1", "--json"))
	if want := e.api("alice", "GET", "/v1/claims/cl_1", ""); !reflect.DeepEqual(got, want) {
		t.Fatalf("claim --json:\n%v\n%v", got, want)
	}
	out = e.ok("alice", "claims", "--state", "supported")
	if !regexp.MustCompile(`cl_1\s+supported\s+th_3\s+ainotes:alice\s`).MatchString(out) {
		t.Fatalf("claims:\n%s", out)
	}
	if out := e.ok("alice", "claims", "--state", "refuted"); !strings.Contains(out, "No claims.") {
		t.Fatalf("claims --state refuted:\n%s", out)
	}
	got = decode(t, e.ok("alice", "claims", "--json", "--thread", "th_3"))
	if want := e.api("alice", "GET", "/v1/claims?thread=th_3", ""); !reflect.DeepEqual(got, want) {
		t.Fatalf("claims --json:\n%v\n%v", got, want)
	}
	// whoami and the manifest.
	out = e.ok("mod", "whoami")
	if !strings.Contains(out, "identity  ainotes:mod (llm)") || !strings.Contains(out, "label     mod") {
		t.Fatalf("whoami: %q", out)
	}
	got = decode(t, e.ok("hana", "whoami", "--json"))
	if want := e.api("hana", "GET", "/v1/whoami", ""); !reflect.DeepEqual(got, want) {
		t.Fatalf("whoami --json:\n%v\n%v", got, want)
	}
	out = e.ok("alice", "manifest")
	if !strings.Contains(out, "escalate") || !strings.Contains(out, "POST /v1/messages") {
		t.Fatalf("manifest:\n%s", out)
	}
}

// TestClientEventsFollow: events --follow prints what is there, then each
// new event as it comes, once, and stops when its context ends.
func TestClientEventsFollow(t *testing.T) {
	e := newClientEnv(t)
	e.ok("alice", "ask", "Before the follow")
	type follower struct {
		out, err testenv.SyncBuffer
		done     chan int
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(args ...string) *follower {
		f := &follower{done: make(chan int, 1)}
		c := e.cli("alice", "", &f.out, &f.err)
		go func() { f.done <- c.run(ctx, args) }()
		return f
	}
	js := start("events", "--follow", "--json")
	human := start("events", "--follow")
	inbox := start("inbox", "--follow")
	waitFor := func(f *follower, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if strings.Contains(f.out.String(), want) {
				return
			}
		}
		t.Fatalf("no %q in:\n%s\n%s", want, f.out.String(), f.err.String())
	}
	waitFor(js, `"thread":"th_1"`)
	waitFor(human, "th_1")
	e.ok("bob", "ask", "Posted while following")
	e.ok("bob", "answer", "th_1", "An answer while following")
	waitFor(js, `"thread":"th_2"`)
	waitFor(js, `"to":"answered"`)
	waitFor(human, "open → answered  proposal by ainotes:bob")
	waitFor(inbox, "th_2")
	waitFor(inbox, "awaiting ainotes:alice")
	time.Sleep(100 * time.Millisecond) // a few more polls: repeats must not print
	cancel()
	for _, f := range []*follower{js, human, inbox} {
		select {
		case code := <-f.done:
			if code != 0 {
				t.Fatalf("follow exited %d: %s", code, f.err.String())
			}
		case <-time.After(5 * time.Second):
			t.Fatal("follow did not stop when its context ended")
		}
	}
	seen := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(js.out.String()), "\n")
	for _, line := range lines {
		var ev core.EventView
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("a line that is not one JSON event: %q", line)
		}
		key := fmt.Sprintf("%s#%d", ev.Thread, ev.Seq)
		if seen[key] {
			t.Fatalf("event %s printed twice:\n%s", key, js.out.String())
		}
		seen[key] = true
	}
	if len(lines) != 3 {
		t.Fatalf("want 3 events (th_1 open, th_2 open, th_1 answered), got:\n%s", js.out.String())
	}
}

// TestClientTokensOverAPI: a human creates, lists and revokes tokens over
// the API; others are refused; the new token works until revoked.
func TestClientTokensOverAPI(t *testing.T) {
	e := newClientEnv(t)
	out := e.ok("hana", "token", "create", "--identity", "ainotes:carol", "--rights", "read,write", "--label", "c")
	secret := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	id := regexp.MustCompile(`tk_[0-9a-f]{12}`).FindString(out)
	if !strings.HasPrefix(secret, "pt_") || id == "" || !strings.Contains(out, "ainotes:carol  read,write") {
		t.Fatalf("token create: %q", out)
	}
	if out := e.ok(secret, "whoami"); !strings.Contains(out, "ainotes:carol") || !strings.Contains(out, id) {
		t.Fatalf("the new token: %q", out)
	}
	out = e.ok("hana", "token", "list")
	if !regexp.MustCompile(id+`\s+ainotes:carol\s+read,write\s+c\s+\S+\s+-\n`).MatchString(out) || strings.Contains(out, secret) || !strings.Contains(out, "human:hana") {
		t.Fatalf("token list:\n%s", out)
	}
	got := decode(t, e.ok("hana", "token", "list", "--json"))
	if want := e.api("hana", "GET", "/v1/tokens", ""); !reflect.DeepEqual(got["tokens"], want["tokens"]) {
		t.Fatalf("token list --json:\n%v\n%v", got, want)
	}
	created := decode(t, e.ok("hana", "--json", "token", "create", "--identity", "human:ida"))
	if created["identity"] != "human:ida" || !strings.HasPrefix(created["secret"].(string), "pt_") || len(created["rights"].([]any)) != 4 {
		t.Fatalf("token create --json: %v", created)
	}
	if code, _, errOut := e.run("alice", "token", "list"); code != 1 || !strings.Contains(errOut, "parley: token_right_missing:") {
		t.Fatalf("an agent listing tokens: %d %q", code, errOut)
	}
	// Revoke by a prefix of the id; then the token is refused.
	out = e.ok("hana", "token", "revoke", strings.TrimPrefix(id, "tk_")[:6])
	if out != "revoked "+id+" (ainotes:carol)\n" {
		t.Fatalf("token revoke: %q", out)
	}
	if code, _, errOut := e.run(secret, "whoami"); code != 1 || !strings.Contains(errOut, "parley: unauthenticated:") || !strings.Contains(errOut, envToken) {
		t.Fatalf("a revoked token: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("hana", "token", "revoke", "tk_ffffffffffff"); code != 1 || !strings.Contains(errOut, "parley: token_not_found:") {
		t.Fatalf("revoking no token: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("hana", "token", "revoke", "zzz"); code != 1 || !strings.Contains(errOut, `no token matches "zzz"`) {
		t.Fatalf("revoking by a prefix of nothing: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("hana", "token", "create", "--rights", "read"); code != 2 || !strings.Contains(errOut, "--identity") {
		t.Fatalf("create without --identity: %d %q", code, errOut)
	}
	if sent := e.trans.find("DELETE /v1/tokens/" + id); len(sent) != 1 {
		t.Fatalf("revoke went %q", e.trans.find("DELETE"))
	}
}

func TestClientHelpAndUsage(t *testing.T) {
	isolate(t)
	code, out, _ := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"parley login URL", "parley inbox", "parley thread th_N", "parley events", "parley confirm th_N", "parley token create", "parley serve", "parley table create", "parley simulate", "parley version", "--json"} {
		if !strings.Contains(out, want) {
			t.Fatalf("usage lacks %q:\n%s", want, out)
		}
	}
	for _, act := range core.Acts { // the acts come from the table
		if !strings.Contains(out, "parley "+string(act.Kind)+" ") {
			t.Fatalf("usage lacks the act %s", act.Kind)
		}
	}
	for _, args := range [][]string{{"help"}, {"help", "thread"}, {"help", "serve"}, {"thread", "--help"}, {"answer", "-h"}, {"token", "--help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, "usage: parley") {
			t.Fatalf("%v: %d %q %q", args, code, out, errOut)
		}
	}
	if _, out, _ := runCLI(t, "help", "answer"); !strings.Contains(out, "Awaits: the author of the nearest ask") {
		t.Fatalf("help answer: %q", out)
	}
	if _, out, _ := runCLI(t, "help", "serve"); !strings.Contains(out, "-rate-limit") {
		t.Fatalf("help serve lacks its flags: %q", out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if code, out, _ := runCLI(t, args...); code != 0 || out != "parley "+instance.Version+"\n" {
			t.Fatalf("%v: %d %q", args, code, out)
		}
	}
	for _, args := range [][]string{{}, {"bogus"}, {"help", "bogus"}, {"--bogus"}, {"thread"}, {"login"}, {"token"}} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "usage: parley") {
			t.Fatalf("%v: exit %d %q", args, code, errOut)
		}
	}
	// Client commands without a login say how to log in.
	if code, _, errOut := runCLI(t, "inbox"); code != 2 || !strings.Contains(errOut, "parley login URL") {
		t.Fatalf("inbox logged out: %d %q", code, errOut)
	}
}

func TestEvidenceFlag(t *testing.T) {
	for in, want := range map[string]core.Evidence{
		"url=https://x.example/a":                {Kind: "url", Ref: "https://x.example/a"},
		"url=https://x.example:8080/a::a run":    {Kind: "url", Ref: "https://x.example:8080/a", Note: "a run"},
		"hash=sha256:abc":                        {Kind: "hash", Ref: "sha256:abc"},
		"url=http://[::1]:8080/x::":              {Kind: "url", Ref: "http://[::1]:8080/x"},
		`{"kind":"log","ref":"a::b","note":"n"}`: {Kind: "log", Ref: "a::b", Note: "n"},
	} {
		got, err := parseEvidence(in)
		if err != nil || got != want {
			t.Fatalf("%q: %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"https://x", "=x", "url=", `{"kind":"url","bogus":1}`} {
		if _, err := parseEvidence(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":            "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":           "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/v1/":        "http://127.0.0.1:8080",
		"127.0.0.1:8080":                   "http://127.0.0.1:8080",
		"localhost:8080":                   "http://localhost:8080",
		"abc.execute-api.eu.amazonaws.com": "https://abc.execute-api.eu.amazonaws.com",
		"https://x.example/prefix/":        "https://x.example/prefix",
	} {
		if got, err := normalizeURL(in); err != nil || got != want {
			t.Fatalf("%q: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"ftp://x", "http://", ""} {
		if _, err := normalizeURL(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// TestMergeThreadPages: a thread read in pages is one tree; a reply whose
// parent came on an earlier page goes beneath it.
func TestMergeThreadPages(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msg := func(id, parent string, sec int) *core.MessageView {
		m := &core.MessageView{ID: id, CreatedAt: at.Add(time.Duration(sec) * time.Second)}
		if parent != "" {
			m.Parent = &parent
		}
		return m
	}
	c := "next"
	p1 := core.ThreadView{ThreadSummary: core.ThreadSummary{ThreadState: core.ThreadState{ID: "th_1", State: "open"}}, Cursor: &c}
	root, a := msg("msg_1", "", 0), msg("msg_2", "msg_1", 1)
	root.Replies = []*core.MessageView{a}
	p1.Messages = []*core.MessageView{root}
	p2 := core.ThreadView{ThreadSummary: core.ThreadSummary{ThreadState: core.ThreadState{ID: "th_1", State: "answered"}}}
	b, d := msg("msg_3", "msg_2", 2), msg("msg_4", "msg_1", 3)
	p2.Messages = []*core.MessageView{b, d}
	got := mergeThread([]core.ThreadView{p1, p2})
	if got.State != "answered" || got.Cursor != nil || len(got.Messages) != 1 {
		t.Fatalf("merged: %+v", got)
	}
	r := got.Messages[0]
	if r.ID != "msg_1" || len(r.Replies) != 2 || r.Replies[0].ID != "msg_2" || r.Replies[1].ID != "msg_4" ||
		len(r.Replies[0].Replies) != 1 || r.Replies[0].Replies[0].ID != "msg_3" {
		raw, _ := json.Marshal(got.Messages)
		t.Fatalf("tree: %s", raw)
	}
}

// TestClientSmoke: `parley smoke` runs infra/smoke against a server, with
// the token from the flags or from the login.
func TestClientSmoke(t *testing.T) {
	e := newClientEnv(t)
	code, out, errOut := e.run("", "smoke", "--url", e.base, "--token", e.tok["hana"])
	if code != 0 || out == "" {
		t.Fatalf("smoke: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := e.run("", "smoke"); code != 2 || !strings.Contains(errOut, "--token") {
		t.Fatalf("smoke without a token: %d %q", code, errOut)
	}
	if code, _, errOut := e.run("hana", "smoke"); code != 0 { // PARLEY_URL and PARLEY_TOKEN
		t.Fatalf("smoke with the environment's login: %d %q", code, errOut)
	}
}
