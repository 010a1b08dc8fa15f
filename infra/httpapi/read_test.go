package httpapi_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/testenv"
)

func ids(list []any) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = obj(v.(map[string]any)).str("id")
	}
	return out
}

// TestListThreadsPaging pages through every thread, with and without a
// state filter, while new threads keep arriving: no gaps, no duplicates.
func TestListThreadsPaging(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	var all []string
	answered := map[string]bool{}
	for i := 0; i < 23; i++ {
		th, _ := w.ask(c.Alice, fmt.Sprintf("q%d", i))
		all = append(all, th)
		if i%3 == 0 {
			w.post(c.Bob, map[string]any{"kind": "answer", "thread": th, "body": "a"}, 201)
			answered[th] = true
		}
	}
	walk := func(state string, limit int, during func()) []string {
		var got []string
		cursor := ""
		for pages := 0; pages < 50; pages++ {
			q := url.Values{"limit": {fmt.Sprint(limit)}}
			if state != "" {
				q.Set("state", state)
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			r := w.do("GET", "/v1/threads?"+q.Encode(), c.Reader, nil)
			if r.status != 200 {
				t.Fatalf("list: %s", r.raw)
			}
			page := ids(r.body.list("threads"))
			if len(page) > limit {
				t.Fatalf("page of %d over limit %d", len(page), limit)
			}
			got = append(got, page...)
			if during != nil {
				during()
			}
			cursor = r.body.str("cursor")
			if cursor == "" {
				return got
			}
		}
		t.Fatal("paging did not end")
		return nil
	}
	t.Run("all, newest first, while threads are added", func(t *testing.T) {
		got := walk("", 5, func() { w.ask(c.Carol, "arrives meanwhile") })
		if len(got) != len(all) {
			t.Fatalf("got %d threads, want %d: %v", len(got), len(all), got)
		}
		for i := range got {
			if got[i] != all[len(all)-1-i] {
				t.Fatalf("position %d: %s, want %s", i, got[i], all[len(all)-1-i])
			}
		}
	})
	t.Run("by state", func(t *testing.T) {
		got := walk("answered", 2, nil)
		seen := map[string]bool{}
		for _, id := range got {
			if !answered[id] || seen[id] {
				t.Fatalf("unexpected or repeated %s in %v", id, got)
			}
			seen[id] = true
		}
		if len(seen) != len(answered) {
			t.Fatalf("got %d answered, want %d", len(seen), len(answered))
		}
	})
	t.Run("default page size", func(t *testing.T) {
		r := w.do("GET", "/v1/threads", c.Reader, nil)
		if n := len(r.body.list("threads")); n != 23+5 { // 23 + one added per page above
			t.Fatalf("default page = %d threads", n)
		}
	})
}

// TestEventsLog: every change appends an event; the chain is unbroken; since
// returns only what is newer, for one thread and for the instance.
func TestEventsLog(t *testing.T) {
	clock := testenv.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w := newWorld(t, core.Options{Clock: clock})
	c := w.cast
	th1, _ := w.ask(c.Alice, "one")
	th2, _ := w.ask(c.Bob, "two")
	w.post(c.Carol, map[string]any{"kind": "answer", "thread": th1, "body": "a"}, 201)
	w.mark(c.Alice, th1, "decided")
	w.do("POST", "/v1/threads/"+th1+"/confirm", c.Mod, map[string]any{"state": "decided"})
	w.mark(c.Bob, th2, "obsolete")
	w.mark(c.Mod, th1, "closed")
	w.do("POST", "/v1/threads/"+th1+"/reopen", c.Human, nil)

	r := w.do("GET", "/v1/events?thread="+th1, c.Reader, nil)
	evs := r.body.list("events")
	want := []string{"-:open", "open:answered", "answered:decided", "decided:decided", "decided:closed", "closed:open"}
	if len(evs) != len(want) {
		t.Fatalf("%d events: %s", len(evs), r.raw)
	}
	prev := ""
	for i, e := range evs {
		ev := obj(e.(map[string]any))
		if ev.str("from") != prev {
			t.Fatalf("event %d from %q, previous to %q", i, ev.str("from"), prev)
		}
		from := ev.str("from")
		if from == "" {
			from = "-"
		}
		if from+":"+ev.str("to") != want[i] || ev.str("actor") == "" || ev.str("at") == "" || ev.str("cause") == "" {
			t.Fatalf("event %d: %v", i, ev)
		}
		prev = ev.str("to")
	}

	// since: page one event at a time and continue from each cursor.
	var paged []string
	cursor := ""
	for i := 0; i < 20; i++ {
		r := w.do("GET", "/v1/events?thread="+th1+"&limit=1&since="+cursor, c.Reader, nil)
		page := r.body.list("events")
		if len(page) == 0 {
			if r.body.str("cursor") != cursor {
				t.Fatalf("an empty page moved the cursor")
			}
			break
		}
		paged = append(paged, fmt.Sprint(obj(page[0].(map[string]any)).num("seq")))
		cursor = r.body.str("cursor")
	}
	if len(paged) != len(want) {
		t.Fatalf("paged %v", paged)
	}
	// Only new events after the cursor.
	w.mark(c.Human, th1, "rejected")
	r = w.do("GET", "/v1/events?thread="+th1+"&since="+cursor, c.Reader, nil)
	if got := r.body.list("events"); len(got) != 1 || obj(got[0].(map[string]any)).str("to") != "rejected" {
		t.Fatalf("since: %s", r.raw)
	}

	all := w.do("GET", "/v1/events", c.Reader, nil)
	if n := len(all.body.list("events")); n != len(want)+1+2 {
		t.Fatalf("instance events = %d: %s", n, all.raw)
	}
	threads := map[string]int{}
	for _, e := range all.body.list("events") {
		threads[obj(e.(map[string]any)).str("thread")]++
	}
	if threads[th2] != 2 {
		t.Fatalf("th2's events in the instance log: %v", threads)
	}
	// The instance feed never moves its cursor past the settle window, so
	// what was read within it comes again once (readers drop repeats by
	// thread and seq); after that, only what is new.
	clock.Advance(w.env.Store.FeedSettle() + time.Second)
	r = w.do("GET", "/v1/events?since="+all.body.str("cursor"), c.Reader, nil)
	if n := len(r.body.list("events")); n != len(want)+1+2 {
		t.Fatalf("the settle window's events again: %d: %s", n, r.raw)
	}
	settled := r.body.str("cursor")
	r = w.do("GET", "/v1/events?since="+settled, c.Reader, nil)
	if len(r.body.list("events")) != 0 {
		t.Fatalf("nothing new expected: %s", r.raw)
	}
	w.post(c.Bob, map[string]any{"kind": "ask", "body": "three"}, 201)
	r = w.do("GET", "/v1/events?since="+settled, c.Reader, nil)
	if got := r.body.list("events"); len(got) != 1 || obj(got[0].(map[string]any)).str("to") != "open" {
		t.Fatalf("the new thread's event: %s", r.raw)
	}
	// A cursor of one thread is not one of another.
	r = w.do("GET", "/v1/events?thread="+th2+"&since="+cursor, c.Reader, nil)
	if r.status != 400 || r.body.str("error.detail.field") != "since" {
		t.Fatalf("foreign cursor: %s", r.raw)
	}
}

// TestInbox: the caller's identity (narrowed by extension), open calls not
// opened by the caller's own party, human calls for humans; since.
func TestInbox(t *testing.T) {
	clock := testenv.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w := newWorld(t, core.Options{Clock: clock})
	c := w.cast
	inbox := func(token, query string) ([]string, string) {
		r := w.do("GET", "/v1/inbox"+query, token, nil)
		if r.status != 200 {
			t.Fatalf("inbox: %s", r.raw)
		}
		return ids(r.body.list("threads")), r.body.str("cursor")
	}
	// t1: an open call by alice (default extension).
	t1, _ := w.ask(c.Alice, "open call from alice")
	// t2: an open call by alice's extension "scout".
	t2 := w.post(c.Alice, map[string]any{"kind": "ask", "body": "scout asks", "from": map[string]any{"extension": "scout"}}, 201).body.str("thread.id")
	// t3: bob's thread; bob clarifies... alice is awaited as alice/"w1".
	t3, _ := w.ask(c.Bob, "bob asks")
	a := w.post(c.Alice, map[string]any{"kind": "answer", "thread": t3, "from": map[string]any{"extension": "w1"}, "body": "alice answers"}, 201).body.str("message.id")
	w.post(c.Bob, map[string]any{"kind": "clarify", "thread": t3, "parent": a, "body": "which one?"}, 201)
	// t4: escalated to humans.
	t4, _ := w.ask(c.Carol, "carol asks")
	w.post(c.Bob, map[string]any{"kind": "escalate", "thread": t4, "body": "needs a human"}, 201)

	cases := []struct {
		name, token, query string
		want               []string
	}{
		{"alice, all extensions: scout's call and her w1 turn", c.Alice, "", []string{t2, t3}},
		{"alice as scout: her own call is hidden", c.Alice, "?extension=scout", []string{t1}},
		{"alice as w1", c.Alice, "?extension=w1", []string{t1, t2, t3}},
		{"alice, default extension given explicitly", c.Alice, "?extension=", []string{t2}},
		{"bob sees open calls", c.Bob, "", []string{t1, t2}},
		{"the human sees open and human calls", c.Human, "", []string{t1, t2, t4}},
		{"a reader sees open calls", c.Reader, "", []string{t1, t2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := inbox(tc.token, tc.query)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("inbox = %v, want %v", got, tc.want)
			}
		})
	}
	followUp := ""
	t.Run("since returns only what is new", func(t *testing.T) {
		// Past the settle window every call so far is settled: the cursor
		// moves with the page (within the window an entry may come twice).
		clock.Advance(w.env.Store.FeedSettle() + time.Second)
		first, cur := inbox(c.Bob, "?limit=1")
		if fmt.Sprint(first) != fmt.Sprint([]string{t1}) {
			t.Fatalf("first page %v", first)
		}
		rest, cur := inbox(c.Bob, "?since="+cur)
		if fmt.Sprint(rest) != fmt.Sprint([]string{t2}) {
			t.Fatalf("second page %v", rest)
		}
		// Nothing new; the cursor may still move on with the settle bound.
		none, _ := inbox(c.Bob, "?since="+cur)
		if len(none) != 0 {
			t.Fatalf("nothing new: %v", none)
		}
		// alice answers in t3 again, awaiting bob now: t3 is new for bob.
		followUp = w.post(c.Alice, map[string]any{"kind": "ask", "thread": t3, "body": "follow-up for bob"}, 201).body.str("message.id")
		got, again := inbox(c.Bob, "?since="+cur)
		if fmt.Sprint(got) != fmt.Sprint([]string{t3}) {
			t.Fatalf("after a new call: %v", got)
		}
		// Within the settle window the same turn may come again; past it, not.
		if got, _ := inbox(c.Bob, "?since="+again); fmt.Sprint(got) != fmt.Sprint([]string{t3}) {
			t.Fatalf("within the window: %v", got)
		}
		clock.Advance(w.env.Store.FeedSettle() + time.Second)
		_, settled := inbox(c.Bob, "?since="+again)
		if got, _ := inbox(c.Bob, "?since="+settled); len(got) != 0 {
			t.Fatalf("past the window: %v", got)
		}
	})
	t.Run("a cleared turn leaves the inbox", func(t *testing.T) {
		w.post(c.Bob, map[string]any{"kind": "ack", "thread": t3, "parent": followUp, "body": "thanks"}, 201)
		got, _ := inbox(c.Bob, "")
		for _, id := range got {
			if id == t3 {
				t.Fatalf("t3 still in bob's inbox: %v", got)
			}
		}
	})
}
