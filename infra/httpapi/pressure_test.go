package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/testenv"
)

// Each scenario the protocol rules of docs/protocol.md §4.2, §5.4, §6.1, §8 and §11 close, tried
// as an agent, a human or an attacker would.

// TestTheHumanOutranks (docs/protocol.md §5.4).
func TestTheHumanOutranks(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	t.Run("a model cannot undo a human's decision", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "release name?")
		if r := w.mark(c.Human, th, "decided"); r.status != 200 {
			t.Fatal(r.raw)
		}
		for _, st := range []string{"closed", "obsolete", "rejected", "deferred"} {
			if r := w.mark(c.Alice, th, st); r.status != 403 || r.reason() != "thread_authority_missing" {
				t.Fatalf("the creator's %s over a human's decided: %s", st, r.raw)
			}
		}
		if r := w.mark(c.Mod, th, "closed"); r.status != 403 || r.body.str("error.detail.confirmed_by") != "human" {
			t.Fatalf("a lock holder over a human's decided: %s", r.raw)
		}
		if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Alice, nil); r.status == 200 {
			t.Fatalf("the creator reopened: %s", r.raw)
		}
		if got := w.thread(th); got.str("state") != "decided" || got.str("state_origin") != "user" {
			t.Fatalf("the human's decision is gone: %v", got)
		}
		// The human may change it.
		if r := w.mark(c.Human, th, "closed"); r.status != 200 {
			t.Fatal(r.raw)
		}
	})
	t.Run("a human's closed is reopened only by a human", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "closed by the human")
		w.mark(c.Human, th, "closed")
		for _, tok := range []string{c.Alice, c.Mod} {
			if r := w.do("POST", "/v1/threads/"+th+"/reopen", tok, nil); r.status != 403 || r.reason() != "thread_authority_missing" {
				t.Fatalf("reopen: %s", r.raw)
			}
		}
		if r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Human, nil); r.status != 200 {
			t.Fatal(r.raw)
		}
	})
	t.Run("confirm names the state it saw", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "a proposal swapped")
		w.mark(c.Alice, th, "answered")
		seen := w.thread(th).str("state")
		w.mark(c.Alice, th, "decided") // the creator swaps the proposal
		if r := w.do("POST", "/v1/threads/"+th+"/confirm", c.Mod, map[string]any{"state": seen}); r.status != 409 || r.reason() != "invalid_transition" {
			t.Fatalf("confirming what was not there any more: %s", r.raw)
		}
		if got := w.thread(th); got.get("proposal") != true || got.str("state") != "decided" {
			t.Fatalf("something was confirmed: %v", got)
		}
	})
}

// TestAwaitingStaysTrue (docs/protocol.md §4.2).
func TestAwaitingStaysTrue(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	inbox := func(tok string) []string {
		return ids(w.do("GET", "/v1/inbox", tok, nil).body.list("threads"))
	}
	has := func(list []string, th string) bool {
		for _, x := range list {
			if x == th {
				return true
			}
		}
		return false
	}
	t.Run("a decided thread leaves every inbox", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "decide me")
		if r := w.mark(c.Alice, th, "decided"); r.body.get("awaiting") != nil {
			t.Fatalf("the creator's decided still awaits: %s", r.raw)
		}
		if has(inbox(c.Bob), th) {
			t.Fatal("still in bob's inbox")
		}
	})
	t.Run("a moderator's deferred awaits nobody", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "defer me")
		if r := w.mark(c.Mod, th, "deferred"); r.body.get("awaiting") != nil {
			t.Fatalf("%s", r.raw)
		}
	})
	t.Run("a reopened thread is an open call to all but the reopener", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "reopen me")
		w.mark(c.Mod, th, "rejected")
		r := w.do("POST", "/v1/threads/"+th+"/reopen", c.Mod, nil)
		if aw := r.body.get("awaiting"); aw == nil || obj(aw.(map[string]any)).str("scope") != "any" {
			t.Fatalf("%s", r.raw)
		}
		if !has(inbox(c.Bob), th) || !has(inbox(c.Alice), th) {
			t.Fatal("the reopened thread is in nobody's inbox")
		}
	})
	t.Run("an inform does not close an open call", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "who knows?")
		w.post(c.Carol, map[string]any{"kind": "inform", "thread": th, "body": "some context"}, 201)
		w.post(c.Carol, map[string]any{"kind": "ack", "thread": th, "body": "noted", "from": map[string]any{"extension": "z"}}, 201)
		if !has(inbox(c.Bob), th) {
			t.Fatal("the question left bob's inbox")
		}
	})
}

// TestDampingByIdentity (docs/protocol.md §8).
func TestDampingByIdentity(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	t.Run("rotating extensions does not restart the exchange", func(t *testing.T) {
		th, root := w.ask(c.Alice, "ping-pong")
		parent, refused := root, 0
		for i := 0; i < 12; i++ {
			tok, who := c.Bob, "b"
			if i%2 == 1 {
				tok, who = c.Alice, "a"
			}
			r := w.do("POST", "/v1/messages", tok, map[string]any{"kind": "object", "thread": th, "parent": parent, "body": fmt.Sprintf("no, %d", i),
				"from": map[string]any{"extension": fmt.Sprintf("%s%d", who, i)}})
			if r.status == 201 {
				parent = r.body.str("message.id")
				continue
			}
			if r.reason() != "limit_exceeded" || r.body.str("error.detail.limit") != "exchange" {
				t.Fatalf("post %d: %s", i, r.raw)
			}
			refused++
			break
		}
		if refused == 0 {
			t.Fatal("twelve alternating messages with new extensions went through")
		}
		if r := w.post(c.Bob, map[string]any{"kind": "escalate", "thread": th, "parent": parent, "body": "a human, please", "from": map[string]any{"extension": "esc"}}, 201); r.status != 201 {
			t.Fatal(r.raw)
		}
	})
	t.Run("one identity cannot talk to itself past the run limit", func(t *testing.T) {
		th, parent := w.ask(c.Alice, "monologue")
		for i := 0; i < 8; i++ {
			r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "inform", "thread": th, "parent": parent, "body": fmt.Sprintf("and %d", i),
				"from": map[string]any{"extension": fmt.Sprintf("e%d", i%3)}})
			if r.status != 201 {
				if i != 5 || r.body.str("error.detail.rule") != "run" {
					t.Fatalf("post %d refused: %s", i, r.raw)
				}
				return
			}
			parent = r.body.str("message.id")
		}
		t.Fatal("eight messages in a row from one identity went through")
	})
	t.Run("the duplicate rule sees through case, invisibles and composition", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "café?")
		w.post(c.Bob, map[string]any{"kind": "inform", "thread": th, "body": "Meet at the Café"}, 201)
		for i, body := range []string{"meet at the café", "Meet at the Café\u200b", "Meet at the Cafe\u0301", "MEET  AT THE CAFÉ"} {
			r := w.do("POST", "/v1/messages", c.Bob, map[string]any{"kind": "inform", "thread": th, "body": body, "from": map[string]any{"extension": fmt.Sprint("v", i)}})
			if r.status != 409 || r.body.str("error.detail.limit") != "duplicate" {
				t.Fatalf("%q: %s", body, r.raw)
			}
		}
	})
	t.Run("humans are exempt from the exchange, run and duplicate limits", func(t *testing.T) {
		th, parent := w.ask(c.Human, "a human thinks aloud")
		for i := 0; i < 8; i++ {
			r := w.post(c.Human, map[string]any{"kind": "inform", "thread": th, "parent": parent, "body": "the same thought", "from": map[string]any{"extension": fmt.Sprint("h", i)}}, 201)
			parent = r.body.str("message.id")
		}
	})
}

// TestBigThreads (docs/protocol.md §6.1): a thread at its message limit with the largest
// messages reads in pages, none over the response limit, and every message
// comes exactly once in order of creation.
func TestBigThreads(t *testing.T) {
	lim := core.ReferenceLimits()
	lim.PostsPerMinute = 0
	lim.Exchange, lim.DuplicateBody = 0, false
	lim.ThreadMessages = 600
	w := newWorldOn(t, testenv.Embedded, core.Options{Limits: lim}) // 600 large posts: embedded
	c := w.cast
	th, _ := w.ask(c.Alice, strings.Repeat("ä", 500))
	ev := []any{}
	for i := 0; i < 8; i++ {
		ev = append(ev, map[string]any{"kind": "url", "ref": "https://example.org/" + strings.Repeat("€", 470), "note": strings.Repeat("ü", 200)})
	}
	for i := 1; i < lim.ThreadMessages; i++ {
		tok := c.Bob
		if i%2 == 0 {
			tok = c.Carol
		}
		w.post(tok, map[string]any{"kind": "assert", "thread": th, "body": fmt.Sprint(i, strings.Repeat("ö", 490)), "evidence": ev,
			"provenance": map[string]any{"model": strings.Repeat("m", 128), "client": strings.Repeat("c", 128)}}, 201)
	}
	if r := w.do("POST", "/v1/messages", c.Bob, map[string]any{"kind": "inform", "thread": th, "body": "one more"}); r.body.str("error.detail.limit") != "messages" {
		t.Fatalf("past the limit: %s", r.raw)
	}
	seen, pages, cursor, biggest := 0, 0, "", 0
	var last string
	for {
		path := "/v1/threads/" + th + "?limit=500"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := w.do("GET", path, c.Reader, nil)
		if r.status != 200 {
			t.Fatalf("page %d: %s", pages, r.raw[:min(300, len(r.raw))])
		}
		biggest = max(biggest, len(r.raw))
		if len(r.raw) > lim.ResponseBytes {
			t.Fatalf("a page of %d bytes, over the limit of %d", len(r.raw), lim.ResponseBytes)
		}
		var walk func(list []any)
		walk = func(list []any) {
			for _, m := range list {
				o := obj(m.(map[string]any))
				seen++
				if id := o.str("id"); id <= last && len(id) == len(last) {
					t.Fatalf("%s after %s: not in order of creation", id, last)
				}
				last = o.str("id")
				walk(o.list("replies"))
			}
		}
		walk(r.body.list("messages"))
		pages++
		next, _ := r.body.get("cursor").(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if seen != lim.ThreadMessages || pages < 2 {
		t.Fatalf("%d messages in %d pages", seen, pages)
	}
	t.Logf("%d messages of the largest kind in %d pages; the largest page %d bytes", seen, pages, biggest)
	// Over MCP the same page travels twice (structured and as text): still under the limit.
	mcp := w.do("GET", "/v1/threads/"+th+"?limit=500", c.Reader, nil)
	var doubled []byte
	doubled, _ = json.Marshal(map[string]any{"structuredContent": mcp.body, "content": []any{map[string]any{"type": "text", "text": mcp.raw}}})
	if len(doubled) > lim.ResponseBytes {
		t.Fatalf("an MCP answer of %d bytes", len(doubled))
	}
}

// TestClaimsKeepTheirRecord (docs/protocol.md §11).
func TestClaimsKeepTheirRecord(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	ev := []any{map[string]any{"kind": "note", "ref": "n"}}
	t.Run("a claim in a closed thread cannot be superseded from elsewhere", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "the old thread")
		cl := w.post(c.Alice, map[string]any{"kind": "assert", "thread": th, "body": "old claim", "evidence": ev, "from": map[string]any{"extension": "x"}}, 201).body.str("claim.id")
		if r := w.mark(c.Human, th, "closed"); r.status != 200 {
			t.Fatal(r.raw)
		}
		before := w.thread(th)
		r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "assert", "body": "new claim", "evidence": ev, "supersedes": []any{cl}})
		if r.status != 409 || r.reason() != "thread_closed" {
			t.Fatalf("%s", r.raw)
		}
		if after := w.thread(th); after.num("version") != before.num("version") {
			t.Fatal("the closed thread changed")
		}
		if got := w.do("GET", "/v1/claims/"+cl, c.Reader, nil).body.str("state"); got != "unverified" {
			t.Fatalf("the claim is %s", got)
		}
	})
	t.Run("a refuted claim stays refuted when superseded", func(t *testing.T) {
		th, _ := w.ask(c.Alice, "refuted claims")
		cl := w.post(c.Alice, map[string]any{"kind": "assert", "thread": th, "body": "wrong claim", "evidence": ev, "from": map[string]any{"extension": "x"}}, 201).body.str("claim.id")
		w.post(c.Bob, map[string]any{"kind": "refute", "claim": cl, "body": "counter-proof", "evidence": ev}, 201)
		nw := w.post(c.Alice, map[string]any{"kind": "assert", "thread": th, "body": "corrected claim", "evidence": ev, "supersedes": []any{cl}, "from": map[string]any{"extension": "y"}}, 201).body.str("claim.id")
		got := w.do("GET", "/v1/claims/"+cl, c.Reader, nil).body
		if got.str("state") != "refuted" || got.str("superseded_by") != nw {
			t.Fatalf("the refutation is hidden: %v", got)
		}
	})
}
