package httpapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/testenv"
)

// TestExchangeLimit: six messages alternating between the same two parties
// with no state change, and the seventh from either is refused — except
// ack, decide and escalate; a third party or a state change breaks it.
// Parties are identities: a fresh extension does not make a new party.
func TestExchangeLimit(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	pingPong := func() (string, string) {
		th, last := w.ask(c.Alice, "ping?")
		who := []string{c.Bob, c.Alice, c.Bob, c.Alice, c.Bob}
		for i, tok := range who {
			w.seq++
			last = w.post(tok, map[string]any{"kind": []string{"clarify", "object"}[i%2], "thread": th, "parent": last, "body": "round " + strconv.Itoa(w.seq)}, 201).body.str("message.id")
		}
		return th, last
	}
	th, last := pingPong()
	if r := w.do("POST", "/v1/messages", c.Bob, map[string]any{"kind": "inform", "thread": th, "body": "bob again"}); r.status != 409 || r.body.str("error.detail.limit") != "exchange" {
		t.Fatalf("the other of the pair: %s", r.raw)
	}
	for _, tok := range []string{c.Alice, c.Bob} {
		env := map[string]any{"kind": "object", "thread": th, "parent": last, "body": "once more"}
		if tok == c.Bob {
			env["from"] = map[string]any{"extension": "x"}
		}
		r := w.do("POST", "/v1/messages", tok, env)
		if tok == c.Alice && (r.status != 409 || r.reason() != "limit_exceeded" || r.body.str("error.detail.limit") != "exchange" || r.body.str("error.detail.hint") == "") {
			t.Fatalf("the seventh message: %s", r.raw)
		}
		if tok == c.Bob && (r.status != 409 || r.body.str("error.detail.limit") != "exchange") {
			// damping counts identities: another extension of bob is still bob
			t.Fatalf("bob/x escapes the pair: %s", r.raw)
		}
	}
	t.Run("exempt acts pass", func(t *testing.T) {
		th, last := pingPong()
		w.post(c.Alice, map[string]any{"kind": "ack", "thread": th, "parent": last, "body": "ok then"}, 201)
		r := w.post(c.Bob, map[string]any{"kind": "escalate", "thread": th, "body": "a human should look"}, 201)
		if awaitingOf(r.body, "thread.") != "human" {
			t.Fatalf("escalate: %s", r.raw)
		}
		w.post(c.Alice, map[string]any{"kind": "decide", "thread": th, "parent": r.body.str("message.id"), "body": "we stop here"}, 201)
		// decide moved the state: the window restarts.
		w.post(c.Bob, map[string]any{"kind": "object", "thread": th, "body": "after the decision"}, 201)
	})
	t.Run("a third party breaks the alternation", func(t *testing.T) {
		th, last := pingPong()
		w.post(c.Carol, map[string]any{"kind": "inform", "thread": th, "parent": last, "body": "an outside view"}, 201)
		w.post(c.Alice, map[string]any{"kind": "inform", "thread": th, "parent": last, "body": "thanks, carol"}, 201)
	})
	t.Run("a state change among them breaks it", func(t *testing.T) {
		th, last := w.ask(c.Alice, "pong?")
		who := []string{c.Bob, c.Alice, c.Bob, c.Alice, c.Bob}
		for i, tok := range who {
			kind := "object"
			if i == 2 {
				kind = "answer" // marks answered: the state moved
			}
			last = w.post(tok, map[string]any{"kind": kind, "thread": th, "parent": last, "body": "turn " + strconv.Itoa(i)}, 201).body.str("message.id")
		}
		w.post(c.Alice, map[string]any{"kind": "object", "thread": th, "parent": last, "body": "still allowed"}, 201)
	})
	t.Run("damping off", func(t *testing.T) {
		lim := core.ReferenceLimits()
		lim.Exchange, lim.PostsPerMinute = 0, 0
		off := newWorld(t, core.Options{Limits: lim})
		th, last := off.ask(off.cast.Alice, "forever?")
		for i := 0; i < 12; i++ {
			tok := []string{off.cast.Bob, off.cast.Alice}[i%2]
			last = off.post(tok, map[string]any{"kind": "object", "thread": th, "parent": last, "body": "no " + strconv.Itoa(i)}, 201).body.str("message.id")
		}
	})
}

func TestDuplicateBody(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, root := w.ask(c.Alice, "Shall we?")
	a := w.post(c.Bob, map[string]any{"kind": "answer", "thread": th, "body": "Thanks, yes."}, 201).body.str("message.id")
	cases := []struct {
		name, token, body, thread string
		status                    int
	}{
		{"the same body again", c.Bob, "Thanks, yes.", th, 409},
		{"the same after whitespace normalisation", c.Bob, "  Thanks,\n yes.\t", th, 409},
		{"a different case is the same body", c.Bob, "thanks, YES.", th, 409},
		{"a compatibility form is the same body", c.Bob, "Ｔhanks, yes.", th, 409},
		{"different words are a different body", c.Bob, "Thanks, no.", th, 201},
		{"another identity may say it", c.Carol, "Thanks, yes.", th, 201},
		{"another thread is another conversation", c.Bob, "Thanks, yes.", "", 201},
		{"the root's body counts too", c.Alice, "Shall we?", th, 409},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]any{"kind": "inform", "thread": tc.thread, "parent": root, "body": tc.body, "from": map[string]any{"extension": "e" + strconv.Itoa(len(tc.name))}}
			if tc.thread == "" {
				other, _ := w.ask(c.Carol, "elsewhere "+tc.name)
				env["thread"], env["parent"] = other, nil
			}
			if tc.token == c.Alice {
				env["parent"] = a
			}
			r := w.post(tc.token, env, tc.status)
			if tc.status == 409 && (r.reason() != "limit_exceeded" || r.body.str("error.detail.limit") != "duplicate") {
				t.Fatalf("%s", r.raw)
			}
		})
	}
	lim := core.ReferenceLimits()
	lim.DuplicateBody, lim.PostsPerMinute = false, 0
	off := newWorld(t, core.Options{Limits: lim})
	th2, r2 := off.ask(off.cast.Alice, "again?")
	off.post(off.cast.Bob, map[string]any{"kind": "inform", "thread": th2, "parent": r2, "body": "same"}, 201)
	off.post(off.cast.Bob, map[string]any{"kind": "inform", "thread": th2, "parent": r2, "body": "same"}, 201)
}

// TestRateLimit: posts per token per minute, counted in DynamoDB, so two
// service instances (two Lambda functions) share one budget.
func TestRateLimit(t *testing.T) {
	clock := testenv.NewClock(time.Date(2026, 6, 1, 12, 0, 10, 0, time.UTC))
	lim := core.ReferenceLimits()
	lim.PostsPerMinute = 3
	w := newWorld(t, core.Options{Limits: lim, Clock: clock})
	c := w.cast
	// A second service on the same table, as another function would be.
	second, err := core.NewService(w.env.Store, core.Options{Limits: lim, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	api, _ := httpapi.New(second, w.env.Logger)
	other := httptest.NewServer(api.Handler())
	defer other.Close()
	first := w.srv
	th, _ := w.ask(c.Alice, "one")                                     // 1st, instance one
	w.post(c.Alice, map[string]any{"kind": "ask", "body": "two"}, 201) // 2nd
	w.srv = other                                                      // the rest through instance two
	if r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "inform", "thread": th, "body": "me again"}); r.reason() != "self_reply" {
		t.Fatalf("a refused post: %s", r.raw)
	}
	w.post(c.Alice, map[string]any{"kind": "inform", "thread": th, "body": "three", "from": map[string]any{"extension": "z"}}, 201) // 3rd: the refusal did not count
	r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "ask", "body": "four"})
	if r.status != 429 || r.reason() != "rate_limited" {
		t.Fatalf("the fourth post: %s", r.raw)
	}
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	w.srv = first
	if r := w.do("POST", "/v1/messages", c.Bob, map[string]any{"kind": "ask", "body": "bob has his own budget"}); r.status != 201 {
		t.Fatalf("another token: %s", r.raw)
	}
	*clock = *testenv.NewClock(time.Date(2026, 6, 1, 12, 1, 0, 0, time.UTC))
	w.post(c.Alice, map[string]any{"kind": "ask", "body": "a new minute"}, 201)
	if n := len(w.do("GET", "/v1/threads", c.Alice, nil).body.list("threads")); n != 4 {
		t.Fatalf("threads %d: the refused post wrote something", n)
	}
}

// TestRateAcrossInstances: sixty warm instances share one token's budget
// of 120 a minute, each asked for two posts (120 in all). Reservations in
// chunks never starve it: at least half the limit gets through however the
// posts spread, never more than the limit (docs/reliability.md states the
// bound). Fixed chunks of a twentieth would let twenty instances hold the
// whole budget unspent and admit 40.
func TestRateAcrossInstances(t *testing.T) {
	clock := testenv.NewClock(time.Date(2026, 6, 1, 12, 0, 1, 0, time.UTC))
	lim := core.ReferenceLimits()
	lim.PostsPerMinute = 120
	lim.Exchange, lim.DuplicateBody = 0, false
	w := newWorldOn(t, testenv.Embedded, core.Options{Limits: lim, Clock: clock})
	secret := w.env.Token(t, "ainotes:busy", "", "read", "write")
	caller, err := w.env.Service.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	instances := make([]*core.Service, 60)
	for i := range instances {
		if instances[i], err = core.NewService(w.env.Store, core.Options{Limits: lim, Clock: clock}); err != nil {
			t.Fatal(err)
		}
	}
	for _, spread := range []struct {
		name string
		pick func(n int) int
	}{
		{"one post per instance in turn", func(n int) int { return n % len(instances) }},
		{"two in a row per instance", func(n int) int { return (n / 2) % len(instances) }},
	} {
		t.Run(spread.name, func(t *testing.T) {
			clock.Advance(time.Minute) // a fresh window
			accepted := 0
			for n := 0; n < 2*len(instances); n++ {
				env := fmt.Sprintf(`{"kind":"ask","body":"post %d"}`, n)
				_, err := instances[spread.pick(n)].PostJSON(context.Background(), caller, []byte(env))
				switch {
				case err == nil:
					accepted++
				case core.AsRefusal(err).Reason != core.ReasonRateLimited:
					t.Fatalf("post %d: %v", n, err)
				}
			}
			if accepted < lim.PostsPerMinute/2 || accepted > lim.PostsPerMinute {
				t.Fatalf("%d posts accepted in a minute; want between %d and %d", accepted, lim.PostsPerMinute/2, lim.PostsPerMinute)
			}
			t.Logf("%d of %d accepted across %d instances", accepted, lim.PostsPerMinute, len(instances))
		})
	}
}

// TestRefusedPostReturnsToItsWindow: a post taken from one minute's budget
// and refused after the minute turned gives the budget back to the minute
// it came from, not to the next one.
func TestRefusedPostReturnsToItsWindow(t *testing.T) {
	clock := testenv.NewClock(time.Date(2026, 6, 1, 12, 0, 59, 990_000_000, time.UTC))
	lim := core.ReferenceLimits()
	lim.PostsPerMinute = 2
	w := newWorldOn(t, testenv.Embedded, core.Options{Limits: lim, Clock: clock})
	c := w.cast
	th, root := w.ask(c.Alice, "one") // the first minute: 1 of 2
	// Refused (self_reply); the clock passes the minute while it is decided.
	if r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "inform", "thread": th, "parent": root, "body": "me"}); r.reason() != "self_reply" {
		t.Fatalf("%s", r.raw)
	}
	clock.Set(time.Date(2026, 6, 1, 12, 1, 0, 500_000_000, time.UTC))
	for i := range 2 {
		w.post(c.Alice, map[string]any{"kind": "ask", "body": fmt.Sprint("new minute ", i)}, 201)
	}
	if r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "ask", "body": "third in the minute"}); r.status != 429 {
		t.Fatalf("the new minute holds %d posts, not more: %s", lim.PostsPerMinute, r.raw)
	}
}
