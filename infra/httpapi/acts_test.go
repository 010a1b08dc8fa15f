package httpapi_test

import (
	"testing"

	"github.com/ainotes/parley/core"
)

// TestActs walks one thread through every act and checks, after each, the
// awaiting effect and the mark of docs/protocol.md §4.
func TestActs(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	type step struct {
		name     string
		token    string
		ext      string
		kind     string
		parent   string // name of an earlier step; "" = the thread's root
		status   int
		state    string
		proposal bool
		awaiting string
	}
	steps := []step{
		{"alice asks", c.Alice, "", "ask", "", 201, "open", false, "any-but:ainotes:alice/"},
		{"bob clarifies", c.Bob, "", "clarify", "alice asks", 201, "open", false, "ainotes:alice/"},
		{"alice informs bob", c.Alice, "", "inform", "bob clarifies", 201, "open", false, "-"},
		{"carol asks within", c.Carol, "", "ask", "alice informs bob", 201, "open", false, "ainotes:alice/"},
		{"bob answers carol's ask", c.Bob, "w1", "answer", "carol asks within", 201, "answered", true, "ainotes:carol/"},
		{"carol objects to the answer", c.Carol, "", "object", "bob answers carol's ask", 201, "answered", true, "ainotes:bob/w1"},
		{"another answer marks nothing more", c.Carol, "", "answer", "alice asks", 201, "answered", true, "ainotes:alice/"},
		{"bob proposes", c.Bob, "", "propose", "carol objects to the answer", 201, "answered", true, "ainotes:alice/"},
		{"alice proposes back", c.Alice, "", "propose", "bob proposes", 201, "answered", true, "ainotes:bob/"},
		{"bob acks", c.Bob, "", "ack", "alice proposes back", 201, "answered", true, "-"},
		{"carol informs, nobody awaited", c.Carol, "", "inform", "bob acks", 201, "answered", true, "-"},
		{"carol escalates", c.Carol, "x", "escalate", "alice proposes back", 201, "answered", true, "human"},
		{"bob cannot decide", c.Bob, "", "decide", "carol escalates", 403, "answered", true, "human"},
		{"the human acks", c.Human, "", "ack", "carol escalates", 201, "answered", true, "-"},
		{"alice decides: a proposal", c.Alice, "", "decide", "carol escalates", 201, "decided", true, "-"},
		{"an answer on a decided thread marks nothing", c.Bob, "", "answer", "alice asks", 201, "decided", true, "ainotes:alice/"},
		{"the moderator decides: nothing to change", c.Mod, "", "decide", "alice asks", 201, "decided", true, "-"},
	}
	ids := map[string]string{}
	thread := ""
	events := 0
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			env := map[string]any{"kind": s.kind, "body": s.name}
			if s.ext != "" {
				env["from"] = map[string]any{"extension": s.ext}
			}
			if thread != "" {
				env["thread"] = thread
			}
			if s.parent != "" {
				env["parent"] = ids[s.parent]
			}
			before := ""
			if thread != "" {
				before = w.thread(thread).str("state")
			}
			r := w.post(s.token, env, s.status)
			if s.status == 201 {
				ids[s.name] = r.body.str("message.id")
				thread = r.body.str("thread.id")
				if got := r.body.str("message.kind"); got != s.kind {
					t.Fatalf("stored kind %q", got)
				}
				if s.parent != "" && r.body.str("message.parent") != ids[s.parent] {
					t.Fatalf("parent = %q, want %q", r.body.str("message.parent"), ids[s.parent])
				}
				if s.ext != "" && r.body.str("message.from.extension") != s.ext {
					t.Fatalf("extension not stored: %s", r.raw)
				}
			}
			th := w.thread(thread)
			if got := th.str("state"); got != s.state {
				t.Fatalf("state = %q, want %q", got, s.state)
			}
			if got := th.get("proposal") == true; got != s.proposal {
				t.Fatalf("proposal = %v, want %v (%s)", got, s.proposal, th.str("state_confirmed_at"))
			}
			if s.proposal && th.get("state_confirmed_at") != nil {
				t.Fatalf("a proposal has state_confirmed_at %v", th.get("state_confirmed_at"))
			}
			if got := awaitingOf(th, ""); got != s.awaiting {
				t.Fatalf("awaiting = %q, want %q", got, s.awaiting)
			}
			if before != s.state {
				events++
			}
			ev := w.do("GET", "/v1/events?thread="+thread, c.Alice, nil)
			if got := len(ev.body.list("events")); got != events { // the opening event counts
				t.Fatalf("events = %d, want %d", got, events)
			}
		})
	}
}

func TestSelfReply(t *testing.T) {
	w := newWorld(t, core.Options{})
	th, root := w.ask(w.cast.Alice, "q")
	r := w.post(w.cast.Alice, map[string]any{"kind": "inform", "thread": th, "body": "more"}, 409)
	if r.reason() != "self_reply" || r.body.str("error.detail.parent") != root {
		t.Fatalf("%s", r.raw)
	}
	// Another extension of the same identity may reply.
	ok := w.post(w.cast.Alice, map[string]any{"kind": "inform", "thread": th, "from": map[string]any{"extension": "w2"}, "body": "more"}, 201)
	// ... and that extension may not reply to itself.
	r = w.post(w.cast.Alice, map[string]any{"kind": "ack", "thread": th, "parent": ok.body.str("message.id"), "from": map[string]any{"extension": "w2"}, "body": "ok"}, 409)
	if r.reason() != "self_reply" {
		t.Fatalf("%s", r.raw)
	}
	if n := w.thread(th).num("message_count"); n != 2 {
		t.Fatalf("message_count = %d, want 2", n)
	}
}

func TestThreadIsATree(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, root := w.ask(c.Alice, "root")
	a := w.post(c.Bob, map[string]any{"kind": "answer", "thread": th, "body": "a"}, 201).body.str("message.id")
	b := w.post(c.Carol, map[string]any{"kind": "inform", "thread": th, "body": "b"}, 201).body.str("message.id")
	a1 := w.post(c.Alice, map[string]any{"kind": "clarify", "thread": th, "parent": a, "body": "a1"}, 201).body.str("message.id")
	// parent given as a plain number and thread as a numeric string
	num := a1[len("msg_"):]
	w.post(c.Bob, map[string]any{"kind": "inform", "thread": th[len("th_"):], "parent": num, "body": "a1a"}, 201)
	got := w.thread(th)
	msgs := got.list("messages")
	if len(msgs) != 1 || obj(msgs[0].(map[string]any)).str("id") != root {
		t.Fatalf("top level = %v", msgs)
	}
	replies := obj(msgs[0].(map[string]any)).list("replies")
	if len(replies) != 2 || obj(replies[0].(map[string]any)).str("id") != a || obj(replies[1].(map[string]any)).str("id") != b {
		t.Fatalf("root's replies out of order: %v", replies)
	}
	deep := obj(replies[0].(map[string]any)).list("replies")
	if len(deep) != 1 || obj(deep[0].(map[string]any)).num("depth") != 3 || len(obj(deep[0].(map[string]any)).list("replies")) != 1 {
		t.Fatalf("nesting under %s: %v", a, deep)
	}
	if got.num("message_count") != 5 || got.str("title") != "root" || got.str("creator.identity") != "ainotes:alice" {
		t.Fatalf("summary: %v", got)
	}
}
