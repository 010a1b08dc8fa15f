package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/testenv"
)

// TestBadInput: hostile bodies and parameters are refused cleanly with
// invalid_body and change nothing.
func TestBadInput(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, _ := w.ask(c.Alice, "target")
	deep := strings.Repeat(`{"a":`, 2000) + "1" + strings.Repeat("}", 2000)
	cases := []struct {
		name, method, path, body, field string
	}{
		{"deep nesting", "POST", "/v1/messages", deep, "a"},
		{"deep nesting in a known field", "POST", "/v1/messages", `{"kind":"ask","body":"x","provenance":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `}`, "provenance"},
		{"invalid UTF-8", "POST", "/v1/messages", "{\"kind\":\"ask\",\"body\":\"\xc3\x28\"}", "body"},
		{"NUL byte", "POST", "/v1/messages", `{"kind":"ask","body":"a\u0000b"}`, "body"},
		{"huge thread number", "POST", "/v1/messages", `{"kind":"inform","thread":1e400,"body":"x"}`, "thread"},
		{"huge thread string", "POST", "/v1/messages", `{"kind":"inform","thread":"99999999999999999999999","body":"x"}`, "thread"},
		{"negative zero", "POST", "/v1/messages", `{"kind":"inform","thread":-0,"body":"x"}`, "thread"},
		{"a body as a number", "POST", "/v1/messages", `{"kind":"ask","body":12}`, "body"},
		{"an array", "POST", "/v1/messages", `[{"kind":"ask","body":"x"}]`, "body"},
		{"forged cursor (valid base64)", "GET", "/v1/threads?cursor=dGhyZWFkc3wwMDAwMDAwMDAwMDFY", "", "cursor"},
		{"forged cursor (another kind)", "GET", "/v1/inbox?since=dGhyZWFkc3wwMDAwMDAwMDAwMDE", "", "since"},
		{"oversized cursor", "GET", "/v1/events?since=" + strings.Repeat("A", 4000), "", "since"},
		{"huge limit", "GET", "/v1/threads?limit=99999999999999999999", "", "limit"},
		{"thread ref with spaces", "GET", "/v1/threads/th_%201", "", "thread"},
	}
	before := w.thread(th)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := w.do(tc.method, tc.path, c.Bob, body)
			if r.status != 400 || r.reason() != "invalid_body" || r.body.str("error.detail.field") != tc.field {
				t.Fatalf("got %d %s", r.status, r.raw[:min(len(r.raw), 300)])
			}
		})
	}
	if after := w.thread(th); after.num("version") != before.num("version") {
		t.Fatal("bad input changed the thread")
	}
	if n := len(w.do("GET", "/v1/threads", c.Bob, nil).body.list("threads")); n != 1 {
		t.Fatalf("%d threads", n)
	}
}

// TestNotFoundPolicy: every thread is visible to every token with read, so
// a missing id is a plain 404; but a token without the needed right is
// refused before existence is looked at — it learns nothing by probing.
func TestNotFoundPolicy(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, _ := w.ask(c.Alice, "exists")
	noRead := w.env.Token(t, "ainotes:writeonly", "", "write")
	for _, probe := range []struct{ method, path string }{
		{"GET", "/v1/threads/"},
		{"GET", "/v1/events?thread="},
	} {
		exists := w.do(probe.method, probe.path+th, noRead, nil)
		missing := w.do(probe.method, probe.path+"th_424242", noRead, nil)
		if exists.status != 403 || missing.status != 403 || exists.raw != missing.raw {
			t.Fatalf("%s: an existing and a missing thread answer differently without read:\n%s\n%s", probe.path, exists.raw, missing.raw)
		}
	}
	exists := w.do("POST", "/v1/threads/"+th+"/mark", c.Reader, map[string]any{"state": "decided"})
	missing := w.do("POST", "/v1/threads/th_424242/mark", c.Reader, map[string]any{"state": "decided"})
	if exists.raw != missing.raw || exists.reason() != "token_right_missing" {
		t.Fatalf("mark without write:\n%s\n%s", exists.raw, missing.raw)
	}
	if r := w.do("GET", "/v1/threads/th_424242", c.Reader, nil); r.status != 404 || r.reason() != "thread_not_found" {
		t.Fatalf("%s", r.raw)
	}
}

// TestRevocationBound: with a token cache (as in Lambda), a revoked token
// keeps working at most TokenCacheTTL after the revocation; without one, it
// stops at once.
func TestRevocationBound(t *testing.T) {
	clock := testenv.NewClock(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	w := newWorld(t, core.Options{Clock: clock, TokenCacheTTL: 30 * time.Second})
	secret := w.env.Token(t, "ainotes:leaky", "", "read")
	if r := w.do("GET", "/v1/whoami", secret, nil); r.status != 200 {
		t.Fatalf("%s", r.raw)
	}
	// Another instance (another process: its own cache) revokes it.
	other, err := core.NewService(w.env.Store, core.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := other.TokenPage(context.Background(), core.ListTokensInput{})
	for _, tk := range tokens.Tokens {
		if tk.Identity == "ainotes:leaky" {
			if _, err := other.RevokeToken(context.Background(), tk.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	*clock = *testenv.NewClock(time.Date(2026, 7, 1, 0, 0, 29, 0, time.UTC))
	if r := w.do("GET", "/v1/whoami", secret, nil); r.status != 200 {
		t.Fatalf("within the cache bound the cached token still answers: %s", r.raw)
	}
	*clock = *testenv.NewClock(time.Date(2026, 7, 1, 0, 0, 31, 0, time.UTC))
	if r := w.do("GET", "/v1/whoami", secret, nil); r.status != 401 {
		t.Fatalf("past the bound: %s", r.raw)
	}
	// Without a cache (the local server's default) revocation is immediate.
	now := newWorld(t, core.Options{})
	s2 := now.env.Token(t, "ainotes:gone", "", "read")
	tokens, _ = now.env.Service.TokenPage(context.Background(), core.ListTokensInput{})
	for _, tk := range tokens.Tokens {
		if tk.Identity == "ainotes:gone" {
			_, _ = now.env.Service.RevokeToken(context.Background(), tk.ID)
		}
	}
	if r := now.do("GET", "/v1/whoami", s2, nil); r.status != 401 {
		t.Fatalf("no cache: %s", r.raw)
	}
}
