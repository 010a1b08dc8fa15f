package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/testenv"
)

// TestRequestShapes sends every kind of request the store makes — each
// method with each of its options — to both DynamoDB-compatible servers:
// the strict one (moto_server, DynamoDB's validation) is the judge of what
// DynamoDB would accept; the embedded one must agree on the results.
func TestRequestShapes(t *testing.T) {
	for _, b := range []testenv.Backend{testenv.Strict, testenv.Embedded} {
		t.Run(string(b), func(t *testing.T) { requestShapes(t, b) })
	}
}

var alice = core.Party{Identity: "ainotes:alice"}
var bob = core.Party{Identity: "ainotes:bob", Extension: "w1"}

// thread builds a thread at a version; the store fills its stamps.
func thread(id, ver int64, aw core.Awaiting, at time.Time) core.Thread {
	return core.Thread{ID: id, Creator: alice, Version: ver, State: core.StateOpen, Origin: core.OriginLLM, ConfirmedAt: &at,
		CreatedAt: at, UpdatedAt: at, RootKind: core.KindAsk, Messages: 1,
		Awaiting: aw, AwaitingVersion: ver}
}

func message(th int64, ord int, parent int64, body string, at time.Time) *core.Message {
	return &core.Message{ID: core.MessageID(th, ord), Thread: th, Parent: parent, Kind: core.KindInform, From: alice, Body: body, CreatedAt: at, Depth: 1}
}

func requestShapes(t *testing.T, b testenv.Backend) {
	ctx := context.Background()
	clock := testenv.NewClock(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	env := testenv.On(t, b, core.Options{Clock: clock})
	st := env.Store
	at := clock.Now()

	t.Run("ids", func(t *testing.T) {
		for _, seq := range []string{"thread", "claim"} {
			a, err := st.NextID(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := st.NextID(ctx, seq); err != nil || n != a+1 {
				t.Fatalf("%s: %d then %d, %v", seq, a, n, err)
			}
		}
	})

	t.Run("tokens", func(t *testing.T) {
		var ids []string
		hash := func(i int) string { return strings.Repeat(fmt.Sprint(i), 64) }
		for i := range 5 {
			h := hash(i + 1)
			tk := core.Token{ID: core.TokenID(h), Hash: h, Identity: fmt.Sprintf("ainotes:t%d", i), Rights: []core.Right{core.RightRead}, CreatedAt: at}
			if _, err := st.PutToken(ctx, tk); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
		if _, err := st.PutToken(ctx, core.Token{ID: ids[0], Hash: hash(1), Identity: "ainotes:other"}); !errors.Is(err, core.ErrExists) {
			t.Fatalf("a second put of a hash: %v", err)
		}
		got, err := st.Token(ctx, hash(1))
		if err != nil || got.Identity != "ainotes:t0" {
			t.Fatalf("token kept: %+v %v", got, err)
		}
		if _, err := st.Token(ctx, "absent"); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("missing token: %v", err)
		}
		var paged []string
		after := ""
		for range 10 {
			page, next, err := st.Tokens(ctx, core.TokenQuery{After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range page {
				paged = append(paged, tk.ID)
			}
			if next == "" {
				break
			}
			after = next
		}
		if fmt.Sprint(paged) != fmt.Sprint(ids) {
			t.Fatalf("paged %v, want %v", paged, ids)
		}
		byPrefix, _, err := st.Tokens(ctx, core.TokenQuery{Prefix: ids[2][:len(ids[2])-1], Limit: 2})
		if err != nil || len(byPrefix) != 1 || byPrefix[0].ID != ids[2] {
			t.Fatalf("prefix: %+v %v", byPrefix, err)
		}
		if err := st.RevokeToken(ctx, hash(2), at); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.Token(ctx, hash(2)); got.RevokedAt == nil {
			t.Fatal("not revoked")
		}
		if err := st.RevokeToken(ctx, "absent", at); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("revoking a missing token: %v", err)
		}
	})

	anyCall := core.Awaiting{Scope: core.AwaitAny, Party: alice}
	toBob := core.Awaiting{Scope: core.AwaitParty, Party: bob}
	toHuman := core.Awaiting{Scope: core.AwaitHuman}
	t.Run("commit and conflicts", func(t *testing.T) {
		th := thread(1, 1, anyCall, at)
		ev := &core.Event{Thread: 1, Seq: 1, To: core.StateOpen, Origin: core.OriginLLM, Actor: alice.Identity, At: at, Confirmed: true, Cause: "msg_10001"}
		idem := &core.Idempotency{Key: "k1", Request: "r1", Thread: 1, Message: core.MessageID(1, 1), Expires: at.Add(time.Hour)}
		if err := st.Commit(ctx, core.Commit{Thread: th, Message: message(1, 1, 0, "root", at), Event: ev, Dedupe: "d1", Idempotency: idem}); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, core.Commit{Thread: th}); !errors.Is(err, core.ErrConflict) {
			t.Fatalf("creating an existing thread: %v", err)
		}
		next := thread(1, 2, toBob, at)
		next.Messages = 2
		stale := core.Commit{Thread: next, PrevVersion: 7, Message: message(1, 2, core.MessageID(1, 1), "reply", at)}
		err := st.Commit(ctx, stale)
		c, lost := errors.AsType[*core.Conflict](err)
		if !lost {
			t.Fatalf("a stale version: %v", err)
		}
		// moto returns the item the condition saw; minidyn does not (then
		// core reads it again).
		if b == testenv.Strict && (c.Current == nil || c.Current.Version != 1) {
			t.Fatalf("the conflict carries %+v", c.Current)
		}
		stale.PrevVersion = 1
		stale.Dedupe = "d1"
		if err := st.Commit(ctx, stale); !errors.Is(err, core.ErrDuplicate) {
			t.Fatalf("a used dedupe key: %v", err)
		}
		stale.Dedupe = "d2"
		stale.Idempotency = idem
		if err := st.Commit(ctx, stale); !errors.Is(err, core.ErrExists) {
			t.Fatalf("a used idempotency key: %v", err)
		}
		stale.Idempotency = nil
		if err := st.Commit(ctx, stale); err != nil {
			t.Fatal(err)
		}
		rec, err := st.Idempotent(ctx, "k1")
		if err != nil || rec.Request != "r1" || rec.Message != core.MessageID(1, 1) || rec.Thread != 1 {
			t.Fatalf("idempotency record: %+v %v", rec, err)
		}
		if _, err := st.Idempotent(ctx, "absent"); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("missing record: %v", err)
		}
	})

	t.Run("reads", func(t *testing.T) {
		got, err := st.Thread(ctx, 1)
		if err != nil || got.Version != 2 || got.Awaiting != toBob || got.AwaitingAt.IsZero() {
			t.Fatalf("thread: %+v %v", got, err)
		}
		if _, err := st.Thread(ctx, 99); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("missing thread: %v", err)
		}
		th, m, err := st.ThreadAndMessage(ctx, 1, core.MessageID(1, 2))
		if err != nil || th.ID != 1 || m.Body != "reply" {
			t.Fatalf("thread and message: %+v %+v %v", th, m, err)
		}
		if _, m, err := st.ThreadAndMessage(ctx, 1, core.MessageID(1, 9)); err != nil || m.ID != 0 {
			t.Fatalf("missing message: %+v %v", m, err)
		}
		if _, _, err := st.ThreadAndMessage(ctx, 99, core.MessageID(99, 1)); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("missing thread: %v", err)
		}
		msgs, err := st.MessagesByID(ctx, []int64{core.MessageID(1, 2), core.MessageID(1, 1), core.MessageID(1, 2), core.MessageID(5, 1)})
		if err != nil || len(msgs) != 3 || msgs[0].Body != "reply" || msgs[1].Body != "root" {
			t.Fatalf("by id (a repeated id is asked for once): %+v %v", msgs, err)
		}
	})

	t.Run("message pages", func(t *testing.T) {
		cur := thread(1, 2, toBob, at)
		cur.Messages = 2
		for ord := 3; ord <= 7; ord++ {
			next := cur
			next.Version++
			next.Messages = ord
			if err := st.Commit(ctx, core.Commit{Thread: next, PrevVersion: cur.Version, Message: message(1, ord, core.MessageID(1, 1), fmt.Sprint("m", ord), at)}); err != nil {
				t.Fatal(err)
			}
			cur = next
		}
		var bodies []string
		after := int64(0)
		for range 10 {
			th, page, more, err := st.Messages(ctx, core.MessageQuery{Thread: 1, After: after, Limit: 3})
			if err != nil || th.ID != 1 || th.Messages != 7 {
				t.Fatalf("page: %+v %v", th, err)
			}
			for _, m := range page {
				bodies = append(bodies, m.Body)
			}
			if !more {
				break
			}
			after = page[len(page)-1].ID
		}
		if fmt.Sprint(bodies) != "[root reply m3 m4 m5 m6 m7]" {
			t.Fatalf("paged %v", bodies)
		}
		// A page that ends exactly at the last message: the thread item
		// comes with it.
		_, page, more, err := st.Messages(ctx, core.MessageQuery{Thread: 1, After: core.MessageID(1, 4), Limit: 3})
		if err != nil || len(page) != 3 || more {
			t.Fatalf("the last page: %d messages, more %v, %v", len(page), more, err)
		}
		if _, _, _, err := st.Messages(ctx, core.MessageQuery{Thread: 99, Limit: 3}); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("missing thread: %v", err)
		}
	})

	// Threads 2..6 await: bob, any, human, bob, and one that needs a moderator.
	t.Run("listings", func(t *testing.T) {
		for i, aw := range []core.Awaiting{toBob, anyCall, toHuman, toBob, {}} {
			id := int64(i + 2)
			th := thread(id, 1, aw, at)
			if aw.Scope == core.AwaitHuman || aw.Scope == core.AwaitNone {
				th.QueueVersion = 1
			}
			if aw.Scope == core.AwaitNone {
				th.ConfirmedAt = nil // a proposal
			}
			if i == 3 {
				th.State = core.StateDecided
			}
			ev := &core.Event{Thread: id, Seq: 1, To: th.State, Origin: core.OriginLLM, Actor: alice.Identity, At: at, Confirmed: true, Cause: "x"}
			if err := st.Commit(ctx, core.Commit{Thread: th, Message: message(id, 1, 0, "root", at), Event: ev}); err != nil {
				t.Fatal(err)
			}
		}
		var ids []int64
		after := int64(0)
		for range 10 {
			page, next, err := st.Threads(ctx, core.ThreadQuery{After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, th := range page {
				ids = append(ids, th.ID)
			}
			if next == 0 {
				break
			}
			after = next
		}
		if fmt.Sprint(ids) != "[6 5 4 3 2 1]" {
			t.Fatalf("threads newest first: %v", ids)
		}
		decided, next, err := st.Threads(ctx, core.ThreadQuery{State: core.StateDecided, Limit: 5})
		if err != nil || len(decided) != 1 || decided[0].ID != 5 || next != 0 {
			t.Fatalf("by state: %+v %d %v", decided, next, err)
		}
		if page, _, err := st.Threads(ctx, core.ThreadQuery{State: core.StateOpen, After: 4, Limit: 5}); err != nil || len(page) != 3 {
			t.Fatalf("by state after a thread: %d %v", len(page), err)
		}
	})

	t.Run("feeds", func(t *testing.T) {
		keepAll := func(core.Thread) bool { return true }
		// Within the settle window the cursor stays behind the entries.
		evs, pos, err := st.Events(ctx, core.EventQuery{Limit: 50})
		if err != nil || len(evs) != 6 || pos == "" {
			t.Fatalf("instance events: %d %q %v", len(evs), pos, err)
		}
		if again, _, _ := st.Events(ctx, core.EventQuery{After: pos, Limit: 50}); len(again) != 6 {
			t.Fatalf("within the window the events come again: %d", len(again))
		}
		clock.Advance(st.FeedSettle() + time.Second)
		_, pos, _ = st.Events(ctx, core.EventQuery{After: pos, Limit: 50})
		if again, _, _ := st.Events(ctx, core.EventQuery{After: pos, Limit: 50}); len(again) != 0 {
			t.Fatalf("past the window nothing comes again: %d", len(again))
		}
		if _, _, err := st.Events(ctx, core.EventQuery{After: "forged", Limit: 5}); !errors.Is(err, core.ErrPosition) {
			t.Fatalf("a forged position: %v", err)
		}
		thEvs, _, err := st.Events(ctx, core.EventQuery{Thread: 1, Limit: 5})
		if err != nil || len(thEvs) != 1 {
			t.Fatalf("thread events: %d %v", len(thEvs), err)
		}
		if none, _, err := st.Events(ctx, core.EventQuery{Thread: 1, AfterSeq: 1, Limit: 5}); err != nil || len(none) != 0 {
			t.Fatalf("thread events after: %d %v", len(none), err)
		}

		inbox := func(identity string, human bool, after string, limit int) ([]int64, string) {
			ths, next, err := st.Awaiting(ctx, core.AwaitingQuery{Identity: identity, Human: human, After: after, Limit: limit, Keep: keepAll})
			if err != nil {
				t.Fatalf("inbox after %q: %v", after, err)
			}
			var ids []int64
			for _, th := range ths {
				ids = append(ids, th.ID)
			}
			return ids, next
		}
		if ids, _ := inbox(bob.Identity, false, "", 50); fmt.Sprint(ids) != "[1 2 3 5]" {
			t.Fatalf("bob's inbox: %v", ids)
		}
		if ids, _ := inbox("human:hana", true, "", 50); fmt.Sprint(ids) != "[3 4]" {
			t.Fatalf("a human's inbox: %v", ids)
		}
		var paged []int64
		pos = ""
		for range 10 {
			ids, next := inbox(bob.Identity, false, pos, 1)
			paged = append(paged, ids...)
			if len(ids) == 0 {
				break
			}
			pos = next
		}
		if fmt.Sprint(paged) != "[1 2 3 5]" {
			t.Fatalf("bob's inbox a page at a time: %v", paged)
		}
		if _, _, err := st.Awaiting(ctx, core.AwaitingQuery{Identity: bob.Identity, After: "x", Limit: 1, Keep: keepAll}); !errors.Is(err, core.ErrPosition) {
			t.Fatalf("a forged position: %v", err)
		}

		queue, next, err := st.Queue(ctx, core.QueueQuery{Limit: 1})
		if err != nil || len(queue) != 1 || queue[0].ID != 4 || next == "" {
			t.Fatalf("queue: %+v %q %v", queue, next, err)
		}
		queue, next, err = st.Queue(ctx, core.QueueQuery{After: next, Limit: 5})
		if err != nil || len(queue) != 1 || queue[0].ID != 6 || next != "" {
			t.Fatalf("queue after: %+v %q %v", queue, next, err)
		}
	})

	t.Run("rate", func(t *testing.T) {
		exp := at.Add(2 * time.Minute)
		if n, ok, err := st.ReserveRate(ctx, "tk#1", 3, 4, exp); err != nil || !ok || n != 3 {
			t.Fatalf("first reservation: %d %v %v", n, ok, err)
		}
		if _, ok, err := st.ReserveRate(ctx, "tk#1", 2, 4, exp); err != nil || ok {
			t.Fatalf("over the limit: %v %v", ok, err)
		}
		if n, ok, err := st.ReserveRate(ctx, "tk#1", 1, 4, exp); err != nil || !ok || n != 4 {
			t.Fatalf("up to the limit: %d %v %v", n, ok, err)
		}
	})

	t.Run("claims", func(t *testing.T) {
		cl := core.Claim{ID: 1, Thread: 1, ThreadCreator: alice.Identity, Message: core.MessageID(1, 8), Author: alice, Body: "c",
			Evidence: []core.Evidence{{Kind: "url", Ref: "https://x"}}, State: core.ClaimUnverified, Version: 1, CreatedAt: at, UpdatedAt: at}
		cur, _ := st.Thread(ctx, 1)
		next := cur
		next.Version++
		next.Messages = 8
		m := message(1, 8, core.MessageID(1, 1), "c", at)
		m.Kind, m.Claim, m.ClaimState = core.KindAssert, 1, core.ClaimUnverified
		if err := st.Commit(ctx, core.Commit{Thread: next, PrevVersion: cur.Version, Message: m, Claims: []core.ClaimChange{{Claim: cl}}}); err != nil {
			t.Fatal(err)
		}
		cl2 := cl
		cl2.State, cl2.Version = core.ClaimSupported, 2
		rec := &core.ClaimRecord{Claim: 1, Seq: 2, Kind: core.KindAttest, Actor: bob, At: at, Message: core.MessageID(1, 9), From: core.ClaimUnverified, To: core.ClaimSupported}
		cur = next
		next.Version++
		next.Messages = 9
		if err := st.Commit(ctx, core.Commit{Thread: next, PrevVersion: cur.Version, Message: message(1, 9, m.ID, "yes", at), Claims: []core.ClaimChange{{Claim: cl2, PrevVersion: 1, Record: rec}}}); err != nil {
			t.Fatal(err)
		}
		got, recs, err := st.ClaimHistory(ctx, 1)
		if err != nil || got.State != core.ClaimSupported || len(recs) != 1 {
			t.Fatalf("history: %+v %d %v", got, len(recs), err)
		}
		if _, m, _ := st.ThreadAndMessage(ctx, 1, core.MessageID(1, 8)); m.ClaimState != core.ClaimSupported {
			t.Fatalf("the assert shows %s", m.ClaimState)
		}
		if _, err := st.Claim(ctx, 9); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("missing claim: %v", err)
		}
		for _, q := range []core.ClaimQuery{{Limit: 5}, {Thread: 1, Limit: 5}, {State: core.ClaimSupported, Limit: 5}, {Thread: 1, State: core.ClaimSupported, Limit: 5}, {After: 2, Limit: 5}} {
			page, next, err := st.Claims(ctx, q)
			if err != nil || len(page) != 1 || next != 0 {
				t.Fatalf("claims %+v: %d %d %v", q, len(page), next, err)
			}
		}
		if page, _, err := st.Claims(ctx, core.ClaimQuery{Thread: 1, State: core.ClaimRefuted, Limit: 5}); err != nil || len(page) != 0 {
			t.Fatalf("a thread's claims in another state: %d %v", len(page), err)
		}
	})
	env.CheckConsistency(t, false)
}

// TestCreateTable: creating the table again is not an error.
func TestCreateTable(t *testing.T) {
	env := testenv.New(t, core.Options{})
	if err := dynamo.CreateTable(context.Background(), env.Client, env.Table); err != nil {
		t.Fatal(err)
	}
}
