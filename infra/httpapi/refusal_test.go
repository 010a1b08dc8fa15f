package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/truora/minidyn/server"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/testenv"
)

// TestRefusals produces each refusal reason of docs/protocol.md §9 that this
// release can meet, checks status, body shape and detail, and that nothing
// changed.
func TestRefusals(t *testing.T) {
	lim := core.ReferenceLimits()
	lim.Depth = 3
	lim.ThreadMessages = 4
	w := newWorld(t, core.Options{Limits: lim})
	c := w.cast
	th, root := w.ask(c.Alice, "q")
	_, otherRoot := w.ask(c.Bob, "elsewhere")
	revoked := w.env.Token(t, "ainotes:gone", "", "read", "write")
	tokens, _ := w.env.Service.TokenPage(context.Background(), core.ListTokensInput{})
	for _, tk := range tokens.Tokens {
		if tk.Identity == "ainotes:gone" {
			if _, err := w.env.Service.RevokeToken(context.Background(), tk.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	closed, _ := w.ask(c.Alice, "to be closed")
	w.mark(c.Human, closed, "closed")

	cases := []struct {
		name, method, path, token string
		body                      any
		status                    int
		reason, field             string
	}{
		{"malformed JSON", "POST", "/v1/messages", c.Bob, `{"kind":`, 400, "invalid_body", "body"},
		{"unknown field", "POST", "/v1/messages", c.Bob, `{"kind":"ask","body":"x","votes":3}`, 400, "invalid_body", "votes"},
		{"missing kind", "POST", "/v1/messages", c.Bob, `{"body":"x"}`, 400, "invalid_body", "kind"},
		{"empty body", "POST", "/v1/messages", c.Bob, `{"kind":"ask","body":"  "}`, 400, "invalid_body", "body"},
		{"body over 500", "POST", "/v1/messages", c.Bob, `{"kind":"ask","body":"` + strings.Repeat("x", 501) + `"}`, 400, "invalid_body", "body"},
		{"request over 16 KiB", "POST", "/v1/messages", c.Bob, `{"kind":"ask","body":"x","provenance":{"model":"` + strings.Repeat("m", 17000) + `"}}`, 413, "too_large", ""},
		{"malformed thread ref", "POST", "/v1/messages", c.Bob, `{"kind":"inform","thread":"t1","body":"x"}`, 400, "invalid_body", "thread"},
		{"parent from another thread", "POST", "/v1/messages", c.Bob, map[string]any{"kind": "inform", "thread": th, "parent": otherRoot, "body": "x"}, 400, "invalid_body", "parent"},
		{"bad state", "POST", "/v1/threads/" + th + "/mark", c.Alice, `{"state":"done"}`, 400, "invalid_body", "state"},
		{"mark without state", "POST", "/v1/threads/" + th + "/mark", c.Alice, `{}`, 400, "invalid_body", "state"},
		{"bad thread in path", "GET", "/v1/threads/th_x", c.Alice, nil, 400, "invalid_body", "thread"},
		{"bad limit", "GET", "/v1/threads?limit=-1", c.Alice, nil, 400, "invalid_body", "limit"},
		{"forged cursor", "GET", "/v1/threads?cursor=Zm9yZ2Vk", c.Alice, nil, 400, "invalid_body", "cursor"},
		{"bad since", "GET", "/v1/inbox?since=%00", c.Alice, nil, 400, "invalid_body", "since"},
		{"bad extension", "GET", "/v1/inbox?extension=A+B", c.Alice, nil, 400, "invalid_body", "extension"},
		{"confirm with a body", "POST", "/v1/threads/" + th + "/confirm", c.Mod, `{"state":"x"}`, 400, "invalid_body", "state"},
		{"no token", "POST", "/v1/messages", "", `{"kind":"ask","body":"x"}`, 401, "unauthenticated", ""},
		{"unknown token", "GET", "/v1/whoami", "pt_nope", nil, 401, "unauthenticated", ""},
		{"revoked token", "POST", "/v1/messages", revoked, `{"kind":"ask","body":"x"}`, 401, "unauthenticated", ""},
		{"reader posts", "POST", "/v1/messages", c.Reader, `{"kind":"ask","body":"x"}`, 403, "token_right_missing", ""},
		{"reader posts junk: rights first", "POST", "/v1/messages", c.Reader, `{junk`, 403, "token_right_missing", ""},
		{"reader marks", "POST", "/v1/threads/" + th + "/mark", c.Reader, `{"state":"decided"}`, 403, "token_right_missing", ""},
		{"writer decides a foreign thread", "POST", "/v1/messages", c.Bob, map[string]any{"kind": "decide", "thread": th, "body": "x"}, 403, "thread_authority_missing", ""},
		{"writer marks a foreign thread", "POST", "/v1/threads/" + th + "/mark", c.Bob, `{"state":"decided"}`, 403, "thread_authority_missing", ""},
		{"writer confirms", "POST", "/v1/threads/" + th + "/confirm", c.Bob, `{"state":"open"}`, 403, "thread_authority_missing", ""},
		{"confirm without the state seen", "POST", "/v1/threads/" + th + "/confirm", c.Mod, nil, 400, "invalid_body", "state"},
		{"get a missing thread", "GET", "/v1/threads/th_999", c.Alice, nil, 404, "thread_not_found", ""},
		{"post into a missing thread", "POST", "/v1/messages", c.Bob, `{"kind":"inform","thread":999,"body":"x"}`, 404, "thread_not_found", ""},
		{"post with parent into a missing thread", "POST", "/v1/messages", c.Bob, `{"kind":"inform","thread":999,"parent":1,"body":"x"}`, 404, "thread_not_found", ""},
		{"mark a missing thread", "POST", "/v1/threads/999/mark", c.Human, `{"state":"closed"}`, 404, "thread_not_found", ""},
		{"events of a missing thread", "GET", "/v1/events?thread=999", c.Alice, nil, 404, "thread_not_found", ""},
		{"missing parent", "POST", "/v1/messages", c.Bob, map[string]any{"kind": "inform", "thread": th, "parent": "msg_999", "body": "x"}, 404, "message_not_found", ""},
		{"self reply", "POST", "/v1/messages", c.Alice, map[string]any{"kind": "inform", "thread": th, "parent": root, "body": "x"}, 409, "self_reply", ""},
		{"closed thread", "POST", "/v1/messages", c.Bob, map[string]any{"kind": "inform", "thread": closed, "body": "x"}, 409, "thread_closed", ""},
		{"three steps at once", "POST", "/v1/threads/" + th + "/mark", c.Alice, `{"state":"closed"}`, 409, "invalid_transition", ""},
		{"reopen an open thread", "POST", "/v1/threads/" + th + "/reopen", c.Human, nil, 409, "invalid_transition", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := w.thread(th)
			r := w.do(tc.method, tc.path, tc.token, tc.body)
			if r.status != tc.status || r.reason() != tc.reason {
				t.Fatalf("got %d %q, want %d %q: %s", r.status, r.reason(), tc.status, tc.reason, r.raw)
			}
			if r.body.str("error.message") == "" || r.body.get("error.detail") == nil {
				t.Fatalf("error object incomplete: %s", r.raw)
			}
			if tc.field != "" && r.body.str("error.detail.field") != tc.field {
				t.Fatalf("detail.field = %q, want %q", r.body.str("error.detail.field"), tc.field)
			}
			if tc.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without WWW-Authenticate")
			}
			after := w.thread(th)
			if after.num("version") != before.num("version") || after.num("message_count") != before.num("message_count") {
				t.Fatalf("a refusal changed the thread")
			}
		})
	}
	t.Run("limits", func(t *testing.T) {
		// depth 3: root(1) → a(2) → b(3) → c would be 4.
		lt, lroot := w.ask(c.Carol, "limits")
		a := w.post(c.Bob, map[string]any{"kind": "answer", "thread": lt, "parent": lroot, "body": "a"}, 201).body.str("message.id")
		b := w.post(c.Carol, map[string]any{"kind": "clarify", "thread": lt, "parent": a, "body": "b"}, 201).body.str("message.id")
		r := w.post(c.Bob, map[string]any{"kind": "inform", "thread": lt, "parent": b, "body": "c"}, 409)
		if r.reason() != "limit_exceeded" || r.body.str("error.detail.limit") != "depth" {
			t.Fatalf("depth: %s", r.raw)
		}
		w.post(c.Alice, map[string]any{"kind": "inform", "thread": lt, "body": "fourth"}, 201)
		r = w.post(c.Alice, map[string]any{"kind": "inform", "thread": lt, "parent": a, "body": "fifth"}, 409)
		if r.reason() != "limit_exceeded" || r.body.str("error.detail.limit") != "messages" {
			t.Fatalf("messages: %s", r.raw)
		}
	})
}

// TestStorageFailure: with the store failing, every write answers
// unavailable with Retry-After and leaves nothing half-written.
func TestStorageFailure(t *testing.T) {
	w := newWorldOn(t, testenv.Embedded, core.Options{})
	c := w.cast
	th, _ := w.ask(c.Alice, "q")
	w.env.DB.Server.EmulateFailure(server.FailureConditionInternalServerError)
	writes := []struct {
		name, method, path, token string
		body                      any
	}{
		{"post new", "POST", "/v1/messages", c.Bob, `{"kind":"ask","body":"x"}`},
		{"post reply", "POST", "/v1/messages", c.Bob, map[string]any{"kind": "answer", "thread": th, "body": "x"}},
		{"mark", "POST", "/v1/threads/" + th + "/mark", c.Alice, `{"state":"decided"}`},
		{"read", "GET", "/v1/threads/" + th, c.Alice, nil},
	}
	for _, tc := range writes {
		t.Run(tc.name, func(t *testing.T) {
			r := w.do(tc.method, tc.path, tc.token, tc.body)
			if r.status != http.StatusServiceUnavailable || r.reason() != "unavailable" || r.header.Get("Retry-After") == "" {
				t.Fatalf("got %d %s (Retry-After %q)", r.status, r.raw, r.header.Get("Retry-After"))
			}
			if strings.Contains(r.raw, "emulated") {
				t.Fatalf("the storage error leaked: %s", r.raw)
			}
		})
	}
	w.env.DB.Server.EmulateFailure(server.FailureConditionNone)
	got := w.thread(th)
	if got.num("message_count") != 1 || got.str("state") != "open" || got.num("version") != 1 {
		t.Fatalf("state after failures: %v", got)
	}
	if n := len(w.do("GET", "/v1/threads", c.Alice, nil).body.list("threads")); n != 1 {
		t.Fatalf("threads after failures: %d", n)
	}
	if !strings.Contains(w.env.Log.String(), `"outcome":"unavailable"`) {
		t.Fatalf("the failure was not logged")
	}
}

// TestIdempotentPost: a retry with the same key and token returns the first
// result and writes nothing new; another token's key is its own.
func TestIdempotentPost(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, _ := w.ask(c.Alice, "q")
	env := map[string]any{"kind": "answer", "thread": th, "body": "once"}
	first := w.do("POST", "/v1/messages", c.Bob, env, "Idempotency-Key", "k-1")
	second := w.do("POST", "/v1/messages", c.Bob, env, "Idempotency-Key", "k-1")
	if first.status != 201 || second.status != 200 || second.body.get("replayed") != true {
		t.Fatalf("statuses %d %d: %s", first.status, second.status, second.raw)
	}
	if first.body.str("message.id") != second.body.str("message.id") {
		t.Fatalf("replay returned another message")
	}
	other := w.do("POST", "/v1/messages", c.Carol, map[string]any{"kind": "inform", "thread": th, "body": "carol"}, "Idempotency-Key", "k-1")
	if other.status != 201 || other.body.str("message.id") == first.body.str("message.id") {
		t.Fatalf("another token's key: %s", other.raw)
	}
	// Concurrent retries of one new ask create one thread.
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := w.do("POST", "/v1/messages", c.Bob, `{"kind":"ask","body":"only once"}`, "Idempotency-Key", "k-2")
			results[i] = r.body.str("message.id")
		}()
	}
	wg.Wait()
	for _, id := range results {
		if id != results[0] || id == "" {
			t.Fatalf("concurrent retries gave %v", results)
		}
	}
	if got := w.thread(th).num("message_count"); got != 3 {
		t.Fatalf("message_count %d, want 3", got)
	}
	if n := len(w.do("GET", "/v1/threads", c.Alice, nil).body.list("threads")); n != 2 {
		t.Fatalf("threads = %d, want 2", n)
	}
	if r := w.do("POST", "/v1/messages", c.Bob, env, "Idempotency-Key", strings.Repeat("k", 129)); r.status != 400 {
		t.Fatalf("overlong key: %s", r.raw)
	}
}
