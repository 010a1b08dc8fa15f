package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/truora/minidyn/server"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/testenv"
)

// TestStorageFaults: with DynamoDB failing, every write operation answers
// unavailable with Retry-After, leaks nothing, and leaves the table exactly
// as it was; once storage is back, the same requests succeed.
func TestStorageFaults(t *testing.T) {
	w := newWorldOn(t, testenv.Embedded, core.Options{})
	c := w.cast
	open, root := w.ask(c.Alice, "open thread")
	proposed, _ := w.ask(c.Alice, "proposed thread")
	w.mark(c.Alice, proposed, "answered")
	closed, _ := w.ask(c.Alice, "closed thread")
	w.mark(c.Human, closed, "closed")
	claim := w.assert(c.Bob, "a claim", nil)
	writes := []struct {
		name, method, path, token string
		body                      any
		ok                        int
	}{
		{"post opening a thread", "POST", "/v1/messages", c.Bob, map[string]any{"kind": "ask", "body": "new"}, 201},
		{"post replying", "POST", "/v1/messages", c.Bob, map[string]any{"kind": "answer", "thread": open, "parent": root, "body": "reply"}, 201},
		{"post asserting", "POST", "/v1/messages", c.Carol, map[string]any{"kind": "assert", "thread": open, "body": "claim", "evidence": evidence}, 201},
		{"post attesting", "POST", "/v1/messages", c.Carol, map[string]any{"kind": "attest", "claim": claim, "body": "seen", "evidence": evidence}, 201},
		{"mark", "POST", "/v1/threads/" + open + "/mark", c.Alice, map[string]any{"state": "decided"}, 200},
		{"confirm", "POST", "/v1/threads/" + proposed + "/confirm", c.Mod, map[string]any{"state": "answered"}, 200},
		{"reopen", "POST", "/v1/threads/" + closed + "/reopen", c.Human, nil, 200},
	}
	before := w.env.CheckConsistency(t, true)
	w.env.DB.Server.EmulateFailure(server.FailureConditionInternalServerError)
	for _, tc := range writes {
		t.Run("failing/"+tc.name, func(t *testing.T) {
			r := w.do(tc.method, tc.path, tc.token, tc.body, "Idempotency-Key", "k-"+tc.name)
			if r.status != 503 || r.reason() != "unavailable" || r.header.Get("Retry-After") == "" {
				t.Fatalf("got %d %s (Retry-After %q)", r.status, r.raw, r.header.Get("Retry-After"))
			}
			if strings.Contains(r.raw, "emulated") || strings.Contains(r.raw, "InternalServerError") {
				t.Fatalf("the storage error leaked: %s", r.raw)
			}
		})
	}
	w.env.DB.Server.EmulateFailure(server.FailureConditionNone)
	if after := w.env.CheckConsistency(t, true); after != before {
		t.Fatalf("failed writes changed the table: %+v → %+v", before, after)
	}
	for _, tc := range writes {
		t.Run("recovered/"+tc.name, func(t *testing.T) {
			if r := w.do(tc.method, tc.path, tc.token, tc.body, "Idempotency-Key", "k-"+tc.name); r.status != tc.ok {
				t.Fatalf("after recovery: %s", r.raw)
			}
		})
	}
	w.env.CheckConsistency(t, true)
}

// TestLostResponse: the write went through but its answer was lost (a
// timeout after DynamoDB committed). The caller sees unavailable; the post
// is whole in the table; a retry with the same idempotency key returns it
// instead of posting twice.
func TestLostResponse(t *testing.T) {
	w := newWorld(t, core.Options{})
	var drop atomic.Bool
	// The answer is lost outside the SDK's retries: the connection breaks
	// after DynamoDB committed, as a client would see it.
	lose := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("lose-response",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					if err == nil && awsmiddleware.GetOperationName(ctx) == "TransactWriteItems" && drop.CompareAndSwap(true, false) {
						return out, md, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
					}
					return out, md, err
				}), middleware.After)
		})
	}
	client, err := config.DynamoDB(context.Background(), w.env.URL, lose)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := dynamo.New(client, w.env.Table, dynamo.Options{})
	svc, _ := core.NewService(st, core.Options{})
	api, _ := httpapi.New(svc, w.env.Logger)
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	w.srv = srv
	th, _ := w.ask(w.cast.Alice, "did it go through?")
	drop.Store(true)
	env := map[string]any{"kind": "answer", "thread": th, "body": "yes"}
	r := w.do("POST", "/v1/messages", w.cast.Bob, env, "Idempotency-Key", "once")
	if r.status != 503 || r.reason() != "unavailable" {
		t.Fatalf("lost answer: %s", r.raw)
	}
	if n := w.thread(th).num("message_count"); n != 2 {
		t.Fatalf("the committed post is not whole: %d messages", n)
	}
	r = w.do("POST", "/v1/messages", w.cast.Bob, env, "Idempotency-Key", "once")
	if r.status != 200 || r.body.get("replayed") != true {
		t.Fatalf("the retry: %s", r.raw)
	}
	if n := w.thread(th).num("message_count"); n != 2 {
		t.Fatalf("the retry posted again: %d messages", n)
	}
	w.env.CheckConsistency(t, true)
}

// TestLoad: 64 concurrent writers on one thread and 64 on 64 threads, three
// posts each, through HTTP, each post with an idempotency key and retried
// on unavailable as a client would. Every post is stored exactly once,
// every event log is an unbroken chain, and nothing answers 5xx but 503.
// (On the embedded server: a heavy run; the strict backend has its own race.)
func TestLoad(t *testing.T) {
	w := newWorldOn(t, testenv.Embedded, core.Options{})
	hot, _ := w.ask(w.cast.Alice, "the hot thread")
	spread := make([]string, 64)
	for i := range spread {
		spread[i], _ = w.ask(w.cast.Alice, fmt.Sprintf("thread %d", i))
	}
	tokens := make([]string, 64)
	for i := range tokens {
		tokens[i] = w.env.Token(t, fmt.Sprintf("ainotes:load%d", i), "", "read", "write")
	}
	type outcome struct {
		thread, id string
		status     int
	}
	var mu sync.Mutex
	var outcomes []outcome
	statuses := map[int]int{}
	run := func(pick func(i int) string) {
		var wg sync.WaitGroup
		for i, tok := range tokens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 3; k++ {
					th := pick(i)
					body := fmt.Sprintf("writer %d post %d", i, k)
					var r resp
					for try := 0; try < 10; try++ {
						r = w.do("POST", "/v1/messages", tok, map[string]any{"kind": "inform", "thread": th, "body": body}, "Idempotency-Key", th+" "+body)
						mu.Lock()
						statuses[r.status]++
						mu.Unlock()
						if r.status != 503 {
							break
						}
					}
					mu.Lock()
					outcomes = append(outcomes, outcome{th, r.body.str("message.id"), r.status})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	run(func(int) string { return hot })
	run(func(i int) string { return spread[i] })
	accepted := map[string]map[string]bool{}
	for status := range statuses {
		if status != 201 && status != 200 && status != 503 {
			t.Fatalf("statuses %v", statuses)
		}
	}
	for _, o := range outcomes {
		if o.status != 201 && o.status != 200 {
			t.Fatalf("a post still unavailable after 10 tries: %+v (statuses %v)", o, statuses)
		}
		if accepted[o.thread] == nil {
			accepted[o.thread] = map[string]bool{}
		}
		accepted[o.thread][o.id] = true
	}
	for th, ids := range accepted {
		seen := map[string]int{}
		var walk func(list []any)
		walk = func(list []any) {
			for _, m := range list {
				o := obj(m.(map[string]any))
				seen[o.str("id")]++
				walk(o.list("replies"))
			}
		}
		walk(w.thread(th).list("messages"))
		for id := range ids {
			if seen[id] != 1 {
				t.Fatalf("%s: accepted %s appears %d times", th, id, seen[id])
			}
		}
		if len(seen) != len(ids)+1 {
			t.Fatalf("%s holds %d messages for %d accepted posts", th, len(seen), len(ids))
		}
	}
	stats := w.env.CheckConsistency(t, true)
	t.Logf("statuses %v; table: %+v", statuses, stats)
}
