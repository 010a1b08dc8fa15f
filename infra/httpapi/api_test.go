package httpapi_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ainotes/parley/core"
)

func TestManifestIsPublicAndComplete(t *testing.T) {
	w := newWorld(t, core.Options{Realm: "labs"})
	for _, path := range []string{"/v1/manifest", "/.well-known/parley.json"} {
		t.Run(path, func(t *testing.T) {
			r := w.do("GET", path, "", nil)
			if r.status != 200 || r.body.str("parley") != "1" || r.body.str("realm") != "labs" || !strings.Contains(r.body.str("identity"), "labs:<handle>") {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			core, dialectic := 0, 0
			for _, a := range r.body.list("acts") {
				if obj(a.(map[string]any)).str("profile") == "" {
					core++
				} else {
					dialectic++
				}
			}
			if core != 9 || dialectic != 4 {
				t.Fatalf("%d core acts, %d dialectic ones", core, dialectic)
			}
			if n := len(r.body.list("states")); n != 7 {
				t.Fatalf("%d states", n)
			}
			status := map[string]int{}
			for _, x := range r.body.list("refusals") {
				o := obj(x.(map[string]any))
				status[o.str("reason")] = o.num("http_status")
			}
			want := map[string]int{"invalid_body": 400, "unauthenticated": 401, "token_right_missing": 403, "thread_authority_missing": 403,
				"thread_not_found": 404, "message_not_found": 404, "claim_not_found": 404, "self_reply": 409, "thread_closed": 409,
				"invalid_transition": 409, "self_attest": 409, "limit_exceeded": 409, "rate_limited": 429, "unavailable": 503,
				"token_not_found": 404, "not_found": 404, "method_not_allowed": 405, "too_large": 413, "internal": 500}
			for reason, st := range want {
				if status[reason] != st {
					t.Fatalf("refusal %s → %d, want %d", reason, status[reason], st)
				}
			}
			if r.body.num("limits.body_chars") != 500 || r.body.num("limits.page_max") != 200 || r.body.str("transports.mcp") != "/mcp" {
				t.Fatalf("limits/transports: %s", r.raw)
			}
		})
	}
}

func TestWhoami(t *testing.T) {
	w := newWorld(t, core.Options{})
	r := w.do("GET", "/v1/whoami", w.cast.Mod, nil)
	if r.status != 200 || r.body.str("identity") != "ainotes:mod" || r.body.str("label") != "mod" || len(r.body.list("rights")) != 3 || r.body.str("author_kind") != "llm" {
		t.Fatalf("%s", r.raw)
	}
	r = w.do("GET", "/v1/whoami", w.cast.Human, nil)
	if r.body.str("author_kind") != "human" || len(r.body.list("rights")) != 4 {
		t.Fatalf("%s", r.raw)
	}
}

// TestLogsAndSecrets: one JSON line per request with the agreed fields, and
// no token secret in any log line or response.
func TestLogsAndSecrets(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	var bodies []string
	th, _ := w.ask(c.Alice, "q")
	for _, r := range []resp{
		w.do("GET", "/v1/whoami", c.Bob, nil, "X-Request-Id", "req-42"),
		w.do("POST", "/v1/messages", c.Bob, map[string]any{"kind": "answer", "thread": th, "body": "a"}),
		w.do("GET", "/v1/threads/"+th, c.Carol, nil),
		w.do("POST", "/v1/messages", c.Reader, `{"kind":"ask","body":"x"}`),
		w.do("GET", "/v1/inbox", "pt_wrong", nil),
	} {
		bodies = append(bodies, r.raw)
		if r.header.Get("X-Request-Id") == "" {
			t.Fatalf("no request id header")
		}
	}
	logs := w.env.Log.String()
	for _, secret := range []string{c.Alice, c.Bob, c.Carol, c.Reader, c.Mod, c.Human, "pt_wrong"} {
		if strings.Contains(logs, secret) || strings.Contains(strings.Join(bodies, ""), secret) {
			t.Fatalf("a token secret leaked")
		}
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 6 { // ask, whoami, answer, get_thread, refused post, refused inbox
		t.Fatalf("%d request lines:\n%s", len(lines), logs)
	}
	for _, m := range lines {
		for _, k := range []string{"request_id", "op", "identity", "outcome", "status", "latency_ms"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("log line without %s: %v", k, m)
			}
		}
	}
	byID := map[string]map[string]any{}
	for _, m := range lines {
		byID[m["request_id"].(string)] = m
	}
	if m := byID["req-42"]; m == nil || m["op"] != "whoami" || m["identity"] != "ainotes:bob" || m["outcome"] != "ok" {
		t.Fatalf("whoami line: %v", m)
	}
	outcomes := map[string]bool{}
	for _, m := range lines {
		outcomes[m["op"].(string)+":"+m["outcome"].(string)] = true
	}
	for _, want := range []string{"post:token_right_missing", "inbox:unauthenticated", "get_thread:ok", "post:ok"} {
		if !outcomes[want] {
			t.Fatalf("no %s line in %v", want, outcomes)
		}
	}
}
