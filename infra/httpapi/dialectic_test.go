package httpapi_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/testenv"
)

var evidence = []map[string]any{{"kind": "url", "ref": "https://example.org/report", "note": "the source"}}

// assert opens a thread with a claim as token and returns the claim id.
func (w *world) assert(token, body string, extra map[string]any) string {
	w.t.Helper()
	env := map[string]any{"kind": "assert", "body": body, "evidence": evidence}
	for k, v := range extra {
		env[k] = v
	}
	r := w.post(token, env, 201)
	return r.body.str("claim.id")
}

func (w *world) act(token, kind, claim string, extra map[string]any) resp {
	w.t.Helper()
	w.seq++
	env := map[string]any{"kind": kind, "claim": claim, "body": fmt.Sprintf("%s %s (%d)", kind, claim, w.seq)}
	if kind != "verify" {
		env["evidence"] = evidence
	}
	for k, v := range extra {
		env[k] = v
	}
	return w.do("POST", "/v1/messages", token, env)
}

func (w *world) claim(id string) obj {
	w.t.Helper()
	r := w.do("GET", "/v1/claims/"+id, w.cast.Reader, nil)
	if r.status != 200 {
		w.t.Fatalf("get %s: %s", id, r.raw)
	}
	return r.body
}

// claimIn brings a new claim of alice's into a state.
func (w *world) claimIn(st core.ClaimState) string {
	w.t.Helper()
	c := w.cast
	id := w.assert(c.Alice, "the claim", nil)
	steps := map[core.ClaimState][]func(){
		core.ClaimSupported: {func() { w.mustAct(c.Bob, "attest", id) }},
		core.ClaimVerified:  {func() { w.mustAct(c.Bob, "attest", id) }, func() { w.mustAct(c.Verifier, "verify", id) }},
		core.ClaimRefuted:   {func() { w.mustAct(c.Bob, "refute", id) }},
		core.ClaimSuperseded: {func() {
			w.assert(c.Alice, "the better claim", map[string]any{"supersedes": []string{id}})
		}},
	}[st]
	for _, f := range steps {
		f()
	}
	if got := w.claim(id).str("state"); got != string(st) {
		w.t.Fatalf("set-up: %s is %s, want %s", id, got, st)
	}
	return id
}

func (w *world) mustAct(token, kind, claim string) {
	w.t.Helper()
	if r := w.act(token, kind, claim, nil); r.status != 201 {
		w.t.Fatalf("%s %s: %s", kind, claim, r.raw)
	}
}

// TestClaimTransitions drives every act on every claim state for the
// claim's author, another writer, a verifier and a human, against docs/protocol.md
// §11 written out by hand.
func TestClaimTransitions(t *testing.T) {
	w := newWorldOn(t, testenv.Embedded, core.Options{}) // a heavy matrix: embedded
	c := w.cast
	type role struct {
		name  string
		token string
	}
	roles := []role{{"author", c.Alice}, {"writer", c.Bob}, {"verifier", c.Verifier}, {"human", c.Human}}
	// to: the resulting state, or the refusal reason.
	expect := func(act string, from core.ClaimState, r string) string {
		fromS := string(from)
		switch act {
		case "attest":
			if r == "author" {
				return "self_attest"
			}
			return map[string]string{"unverified": "supported", "supported": "supported", "verified": "verified"}[fromS]
		case "verify":
			if r == "author" || r == "writer" {
				return "token_right_missing"
			}
			return map[string]string{"supported": "verified"}[fromS]
		case "refute":
			if r == "author" {
				return "self_reply" // the assert is the default parent, same (identity, extension)
			}
			if from == core.ClaimSuperseded {
				return ""
			}
			return "refuted"
		case "supersede":
			if r == "writer" || r == "verifier" {
				return "thread_authority_missing"
			}
			if from == core.ClaimSuperseded {
				return ""
			}
			if from == core.ClaimRefuted {
				return "refuted" // a refutation stays on the record
			}
			return "superseded"
		}
		return "?"
	}
	status := map[string]int{"self_attest": 409, "self_reply": 409, "invalid_transition": 409, "token_right_missing": 403, "thread_authority_missing": 403}
	for _, act := range []string{"attest", "verify", "refute", "supersede"} {
		for _, from := range core.ClaimStates {
			for _, r := range roles {
				t.Run(fmt.Sprintf("%s/%s/%s", act, from, r.name), func(t *testing.T) {
					id := w.claimIn(from)
					before := w.claim(id)
					var res resp
					if act == "supersede" {
						res = w.do("POST", "/v1/messages", r.token, map[string]any{"kind": "assert", "body": "replacement", "evidence": evidence, "supersedes": []string{id}})
					} else {
						res = w.act(r.token, act, id, nil)
					}
					want := expect(act, from, r.name)
					if want == "" {
						want = "invalid_transition"
					}
					after := w.claim(id)
					if code, refused := status[want]; refused {
						if res.status != code || res.reason() != want {
							t.Fatalf("got %d %s, want %d %s: %s", res.status, res.reason(), code, want, res.raw)
						}
						if after.num("version") != before.num("version") || len(after.list("history")) != len(before.list("history")) {
							t.Fatalf("a refused act changed the claim")
						}
						return
					}
					if res.status != 201 || after.str("state") != want {
						t.Fatalf("got %d, state %s, want %s: %s", res.status, after.str("state"), want, res.raw)
					}
					hist := after.list("history")
					last := obj(hist[len(hist)-1].(map[string]any))
					if last.str("kind") != act || last.str("from") != string(from) || last.str("to") != want || last.str("at") == "" || last.str("message") == "" {
						t.Fatalf("history entry %v", last)
					}
					if act == "supersede" {
						if after.str("superseded_by") != res.body.str("claim.id") {
							t.Fatalf("superseded_by %q, new claim %q", after.str("superseded_by"), res.body.str("claim.id"))
						}
					} else if len(last.list("evidence")) != map[bool]int{true: 0, false: 1}[act == "verify"] {
						t.Fatalf("history evidence %v", last.list("evidence"))
					}
				})
			}
		}
	}
}

func TestClaimReads(t *testing.T) {
	clock := testenv.NewClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	w := newWorld(t, core.Options{Clock: clock})
	c := w.cast
	// A claim that expires within the hour, in a thread alice opened with an ask.
	th, _ := w.ask(c.Alice, "Is the cache safe?")
	r := w.post(c.Bob, map[string]any{"kind": "assert", "thread": th, "body": "It is, until the next release.", "evidence": evidence, "valid_until": "2026-05-01T01:00:00Z"}, 201)
	id := r.body.str("claim.id")
	if r.body.get("claim.expired") != false || r.body.str("claim.thread") != th {
		t.Fatalf("fresh claim: %s", r.raw)
	}
	w.mustAct(c.Carol, "attest", id)
	w.mustAct(c.Verifier, "verify", id)

	t.Run("the thread shows the claim's state beside its assert", func(t *testing.T) {
		msgs := w.thread(th).list("messages")
		root := obj(msgs[0].(map[string]any))
		assert := obj(root.list("replies")[0].(map[string]any))
		if assert.str("claim.id") != id || assert.str("claim.state") != "verified" || len(assert.list("evidence")) != 1 {
			t.Fatalf("assert message %v", assert)
		}
		attest := obj(assert.list("replies")[0].(map[string]any))
		if attest.str("kind") != "attest" || attest.str("claim.id") != id || attest.str("claim.state") != "" {
			t.Fatalf("attest message %v", attest)
		}
	})
	t.Run("refute after verify: the Popperian asymmetry", func(t *testing.T) {
		r := w.act(c.Carol, "refute", id, nil)
		if r.status != 201 || r.body.str("claim.state") != "refuted" || awaitingOf(r.body, "thread.") != "ainotes:bob/" {
			t.Fatalf("refute: %s", r.raw)
		}
		hist := w.claim(id).list("history")
		var kinds []string
		for _, h := range hist {
			kinds = append(kinds, obj(h.(map[string]any)).str("kind"))
		}
		if fmt.Sprint(kinds) != "[attest verify refute]" {
			t.Fatalf("history %v", kinds)
		}
	})
	t.Run("past valid_until reads as expired without a state change", func(t *testing.T) {
		for clock.Now().Before(time.Date(2026, 5, 1, 1, 0, 1, 0, time.UTC)) {
			// the test clock advances a millisecond per reading; jump ahead
			*clock = *testenv.NewClock(time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC))
		}
		got := w.claim(id)
		if got.get("expired") != true || got.str("state") != "refuted" {
			t.Fatalf("expired claim: %v", got)
		}
		assert := obj(obj(w.thread(th).list("messages")[0].(map[string]any)).list("replies")[0].(map[string]any))
		if assert.get("claim.expired") != true {
			t.Fatalf("thread view of an expired claim: %v", assert)
		}
	})
	t.Run("claim_not_found and a claim of another thread", func(t *testing.T) {
		if r := w.act(c.Bob, "attest", "cl_99", nil); r.status != 404 || r.reason() != "claim_not_found" {
			t.Fatalf("%s", r.raw)
		}
		if r := w.do("GET", "/v1/claims/cl_99", c.Bob, nil); r.status != 404 || r.reason() != "claim_not_found" {
			t.Fatalf("%s", r.raw)
		}
		other, _ := w.ask(c.Carol, "another thread")
		if r := w.act(c.Carol, "attest", id, map[string]any{"thread": other}); r.status != 400 || r.body.str("error.detail.field") != "thread" {
			t.Fatalf("%s", r.raw)
		}
	})
}

// TestSupersessionChains: a superseded claim accepts nothing; authority
// decides who may supersede whose claim.
func TestSupersessionChains(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	a := w.assert(c.Alice, "v1", nil)
	b := w.assert(c.Alice, "v2", map[string]any{"supersedes": []string{a}})
	cc := w.assert(c.Alice, "v3", map[string]any{"supersedes": []string{b}})
	for _, old := range []string{a, b} {
		for _, act := range []struct{ token, kind string }{{c.Bob, "attest"}, {c.Verifier, "verify"}, {c.Bob, "refute"}} {
			if r := w.act(act.token, act.kind, old, nil); r.status != 409 || r.reason() != "invalid_transition" {
				t.Fatalf("%s on superseded %s: %s", act.kind, old, r.raw)
			}
		}
	}
	if w.claim(a).str("superseded_by") != b || w.claim(b).str("superseded_by") != cc || w.claim(cc).get("superseded_by") != nil {
		t.Fatalf("chain: %v %v", w.claim(a), w.claim(b))
	}
	if got := w.claim(cc).list("supersedes"); len(got) != 1 || got[0] != b {
		t.Fatalf("supersedes %v", got)
	}
	// Superseding again, or two claims of which one fails, writes nothing.
	d := w.assert(c.Alice, "v4", nil)
	r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "assert", "body": "v5", "evidence": evidence, "supersedes": []string{d, a}})
	if r.status != 409 || r.reason() != "invalid_transition" || w.claim(d).str("state") != "unverified" {
		t.Fatalf("half a supersession: %s", r.raw)
	}
	// A lock holder has authority over every thread; bob has none over alice's.
	if r := w.do("POST", "/v1/messages", c.Bob, map[string]any{"kind": "assert", "body": "mine now", "evidence": evidence, "supersedes": []string{d}}); r.status != 403 {
		t.Fatalf("bob supersedes alice's claim: %s", r.raw)
	}
	if r := w.do("POST", "/v1/messages", c.Mod, map[string]any{"kind": "assert", "body": "moderated", "evidence": evidence, "supersedes": []string{d}}); r.status != 201 || w.claim(d).str("state") != "superseded" {
		t.Fatalf("lock holder supersedes: %s", r.raw)
	}
	if r := w.do("POST", "/v1/messages", c.Bob, map[string]any{"kind": "assert", "body": "x", "evidence": evidence, "supersedes": []string{"cl_999"}}); r.status != 404 || r.reason() != "claim_not_found" {
		t.Fatalf("superseding a missing claim: %s", r.raw)
	}
}

func TestListClaims(t *testing.T) {
	w := newWorld(t, core.Options{})
	c := w.cast
	th, _ := w.ask(c.Carol, "claims live here")
	var inThread []string
	for i := 0; i < 7; i++ {
		// three authors take turns: one identity writing six in a row, or two
		// alternating, is damped
		r := w.post([]string{c.Alice, c.Mod, c.Human}[i%3], map[string]any{"kind": "assert", "thread": th, "body": fmt.Sprintf("claim %d", i), "evidence": evidence}, 201)
		inThread = append(inThread, r.body.str("claim.id"))
	}
	elsewhere := w.assert(c.Bob, "elsewhere", nil)
	for _, id := range inThread[:3] {
		w.mustAct(c.Bob, "attest", id)
	}
	walk := func(query string, limit int) []string {
		var got []string
		cursor := ""
		for i := 0; i < 20; i++ {
			r := w.do("GET", fmt.Sprintf("/v1/claims?%s&limit=%d&cursor=%s", query, limit, cursor), c.Reader, nil)
			if r.status != 200 {
				t.Fatalf("%s", r.raw)
			}
			got = append(got, ids(r.body.list("claims"))...)
			if cursor = r.body.str("cursor"); cursor == "" {
				return got
			}
		}
		t.Fatal("paging did not end")
		return nil
	}
	if got := walk("thread="+th, 2); fmt.Sprint(got) != fmt.Sprint(reverse(inThread)) {
		t.Fatalf("by thread %v", got)
	}
	if got := walk("thread="+th+"&state=supported", 2); fmt.Sprint(got) != fmt.Sprint(reverse(inThread[:3])) {
		t.Fatalf("by thread and state %v", got)
	}
	if got := walk("state=unverified", 3); fmt.Sprint(got) != fmt.Sprint(append([]string{elsewhere}, reverse(inThread[3:])...)) {
		t.Fatalf("by state %v", got)
	}
	if got := walk("", 4); len(got) != 8 || got[0] != elsewhere {
		t.Fatalf("all %v", got)
	}
	if r := w.do("GET", "/v1/claims?state=doubtful", c.Reader, nil); r.status != 400 {
		t.Fatalf("%s", r.raw)
	}
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// TestConcurrentAttestAndRefute: racing acts on one claim serialise; the
// final state is what the recorded history, replayed, says it must be.
func TestConcurrentAttestAndRefute(t *testing.T) {
	w := newWorld(t, core.Options{})
	id := w.assert(w.cast.Alice, "contested", nil)
	tokens := make([]string, 12)
	for i := range tokens {
		tokens[i] = w.env.Token(t, fmt.Sprintf("ainotes:racer%d", i), "", "read", "write")
	}
	var wg sync.WaitGroup
	statuses := make([]int, len(tokens))
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := "attest"
			if i%3 == 0 {
				kind = "refute"
			}
			statuses[i] = w.act(tok, kind, id, nil).status
		}()
	}
	wg.Wait()
	accepted := 0
	for _, s := range statuses {
		switch s {
		case 201:
			accepted++
		case 409: // an attest that arrived after a refute
		case 503: // contention outlasted the retries: refused whole
		default:
			t.Fatalf("statuses %v", statuses)
		}
	}
	got := w.claim(id)
	hist := got.list("history")
	if len(hist) != accepted || got.num("version") != 1+accepted {
		t.Fatalf("%d accepted, %d records, version %d", accepted, len(hist), got.num("version"))
	}
	state := core.ClaimUnverified
	for i, h := range hist {
		rec := obj(h.(map[string]any))
		next, err := core.ClaimStep(core.Kind(rec.str("kind")), state)
		if err != nil || rec.str("from") != string(state) || rec.str("to") != string(next) {
			t.Fatalf("record %d (%v) does not follow from %s", i, rec, state)
		}
		state = next
	}
	if got.str("state") != string(state) {
		t.Fatalf("claim is %s, its history says %s", got.str("state"), state)
	}
	if n := w.thread(got.str("thread")).num("message_count"); n != 1+accepted {
		t.Fatalf("thread holds %d messages, want %d", n, 1+accepted)
	}
}

// TestProfileOff: without the dialectic profile its kinds, fields and
// routes do not exist.
func TestProfileOff(t *testing.T) {
	w := newWorld(t, core.Options{Profiles: []string{}})
	c := w.cast
	r := w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "assert", "body": "x", "evidence": evidence})
	if r.status != 400 || r.body.str("error.detail.field") != "kind" {
		t.Fatalf("assert: %s", r.raw)
	}
	r = w.do("POST", "/v1/messages", c.Alice, map[string]any{"kind": "ask", "body": "x", "evidence": evidence})
	if r.status != 400 || r.body.str("error.detail.field") != "evidence" {
		t.Fatalf("evidence: %s", r.raw)
	}
	if r := w.do("GET", "/v1/claims", c.Alice, nil); r.status != 404 {
		t.Fatalf("claims route: %s", r.raw)
	}
	m := w.do("GET", "/v1/manifest", "", nil)
	if len(m.body.list("profiles")) != 0 {
		t.Fatalf("manifest profiles %v", m.body.list("profiles"))
	}
	on := newWorld(t, core.Options{})
	prof := obj(on.do("GET", "/v1/manifest", "", nil).body.list("profiles")[0].(map[string]any))
	if prof.str("name") != "dialectic" || len(prof.list("kinds")) != 4 || len(prof.list("evidence_kinds")) != 8 {
		t.Fatalf("profile %v", prof)
	}
}
