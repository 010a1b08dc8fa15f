package httpapi_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
)

// TestConcurrentPostsAndMarks: 32 concurrent posts and marks on one thread,
// on the strict backend. Posts carry idempotency keys and are retried on
// unavailable, as a client would: every post is stored exactly once, no
// request outlasts a Lambda's timeout, and the event log is an unbroken chain.
func TestConcurrentPostsAndMarks(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, _ := w.ask(c.Alice, "the contested thread")
	writers := []string{c.Bob, c.Carol, c.Mod}
	kinds := []string{"inform", "object", "clarify"}
	states := []string{"answered", "decided", "deferred", "open", "obsolete", "answered", "rejected", "decided"}
	type result struct {
		mark   bool
		status int
		reason string
		id     string
	}
	results := make([]result, 32)
	took := make([]time.Duration, 32)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i%4 == 3 {
				r := w.do("POST", "/v1/threads/"+th+"/mark", c.Human, map[string]any{"state": states[i/4]})
				results[i] = result{mark: true, status: r.status, reason: r.reason()}
				return
			}
			env := map[string]any{"kind": kinds[i%3], "thread": th, "body": fmt.Sprintf("post %d", i), "from": map[string]any{"extension": fmt.Sprintf("x%d", i)}}
			for try := 0; try < 5; try++ {
				began := time.Now()
				r := w.do("POST", "/v1/messages", writers[i%3], env, "Idempotency-Key", fmt.Sprintf("race-%d", i))
				took[i] = max(took[i], time.Since(began))
				results[i] = result{status: r.status, reason: r.reason(), id: r.body.str("message.id")}
				if r.status != 503 {
					break
				}
			}
		}()
	}
	close(start)
	wg.Wait()

	posted := map[string]bool{}
	marks, unavailable := 0, 0
	for i, r := range results {
		switch {
		case !r.mark && (r.status == 201 || r.status == 200):
			posted[r.id] = true
		case r.mark && r.status == 200:
			marks++
		case r.mark && r.status == 409 && r.reason == "invalid_transition":
			// the human re-marked the state it already had: a legitimate refusal
		case r.status == 503 && r.reason == "unavailable":
			// contention outlasted the retries: refused whole, nothing written
			unavailable++
		default:
			t.Errorf("request %d: %d %s", i, r.status, r.reason)
		}
	}
	if len(posted) != 24 {
		t.Fatalf("%d of 24 posts stored (%d still unavailable after retries)", len(posted), unavailable)
	}
	// Bounded by construction (contention budget, commit timeout): the
	// ceiling is a Lambda's timeout, far above what any machine needs.
	for i, d := range took {
		if d > 10*time.Second {
			t.Errorf("post %d took %s, over the Lambda timeout", i, d)
		}
	}
	got := w.thread(th)
	var walk func(list []any)
	seen := map[string]int{}
	walk = func(list []any) {
		for _, m := range list {
			o := obj(m.(map[string]any))
			seen[o.str("id")]++
			walk(o.list("replies"))
		}
	}
	walk(got.list("messages"))
	for id := range posted {
		if seen[id] != 1 {
			t.Fatalf("accepted %s appears %d times", id, seen[id])
		}
	}
	if len(seen) != 1+len(posted) || got.num("message_count") != 1+len(posted) {
		t.Fatalf("thread holds %d messages (count %d), want %d", len(seen), got.num("message_count"), 1+len(posted))
	}
	evs := w.do("GET", "/v1/events?thread="+th+"&limit=200", c.Alice, nil).body.list("events")
	if len(evs) != 1+marks {
		t.Fatalf("%d events for %d accepted marks", len(evs), marks)
	}
	prev, prevSeq := "", 0
	for i, e := range evs {
		ev := obj(e.(map[string]any))
		if ev.str("from") != prev || ev.num("seq") <= prevSeq {
			t.Fatalf("event %d breaks the chain: from %q after %q (seq %d after %d)", i, ev.str("from"), prev, ev.num("seq"), prevSeq)
		}
		prev, prevSeq = ev.str("to"), ev.num("seq")
	}
	if prev != got.str("state") {
		t.Fatalf("last event ends in %s, thread is %s", prev, got.str("state"))
	}
	if got.num("version") != 1+len(posted)+marks {
		t.Fatalf("version %d, want %d", got.num("version"), 1+len(posted)+marks)
	}
	w.env.CheckConsistency(t, true)
}
