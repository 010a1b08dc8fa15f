package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/localdb"
)

func newStore(t *testing.T) *dynamo.Store {
	t.Helper()
	db, err := localdb.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	client, err := config.DynamoDB(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTable(ctx, client, "parley"); err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTable(ctx, client, "parley"); err != nil {
		t.Fatalf("creating an existing table must not fail: %v", err)
	}
	st, err := dynamo.New(client, "parley", nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func thread(id int64, ver int64, aw core.Awaiting, at time.Time) core.Thread {
	p := core.Party{Identity: "ainotes:a"}
	return core.Thread{ID: id, Creator: p, Version: ver, State: core.StateOpen, Origin: core.OriginLLM,
		CreatedAt: at, UpdatedAt: at, Root: core.Message{ID: id, Kind: core.KindAsk}, Messages: 1,
		Awaiting: aw, AwaitingAt: at}
}

func TestCommitIsConditional(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	now := time.Now()
	msg := &core.Message{ID: 1, Thread: 1, Kind: core.KindAsk, Body: "q", CreatedAt: now, Depth: 1}
	if err := st.Commit(ctx, core.Commit{Thread: thread(1, 1, core.Awaiting{}, now), Message: msg}); err != nil {
		t.Fatal(err)
	}
	t.Run("creating an existing thread conflicts", func(t *testing.T) {
		err := st.Commit(ctx, core.Commit{Thread: thread(1, 1, core.Awaiting{}, now)})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict", err)
		}
	})
	t.Run("a stale version conflicts and writes nothing", func(t *testing.T) {
		m2 := &core.Message{ID: 2, Thread: 1, Parent: 1, Kind: core.KindAnswer, Body: "a", CreatedAt: now, Depth: 2}
		err := st.Commit(ctx, core.Commit{Thread: thread(1, 3, core.Awaiting{}, now), PrevVersion: 2, Message: m2})
		if !errors.Is(err, core.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict", err)
		}
		_, msgs, err := st.ThreadMessages(ctx, 1)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("messages after a failed commit: %d, %v", len(msgs), err)
		}
	})
	t.Run("a used idempotency key is ErrExists", func(t *testing.T) {
		idem := &core.Idempotency{Key: "k1", Result: []byte(`{}`), Expires: now.Add(time.Hour)}
		if err := st.Commit(ctx, core.Commit{Thread: thread(1, 2, core.Awaiting{}, now), PrevVersion: 1, Idempotency: idem}); err != nil {
			t.Fatal(err)
		}
		err := st.Commit(ctx, core.Commit{Thread: thread(1, 3, core.Awaiting{}, now), PrevVersion: 2, Idempotency: idem})
		if !errors.Is(err, core.ErrExists) {
			t.Fatalf("got %v, want ErrExists", err)
		}
		got, err := st.Idempotent(ctx, "k1")
		if err != nil || string(got) != `{}` {
			t.Fatalf("Idempotent = %q, %v", got, err)
		}
	})
	t.Run("a message is found in its thread and by id", func(t *testing.T) {
		th, m, err := st.ThreadAndMessage(ctx, 1, 1)
		if err != nil || th.ID != 1 || m.ID != 1 || m.Body != "q" {
			t.Fatalf("got %+v %+v %v", th, m, err)
		}
		if _, m, _ := st.ThreadAndMessage(ctx, 1, 99); m.ID != 0 {
			t.Fatalf("a missing message came back: %+v", m)
		}
		if th, err := st.MessageThread(ctx, 1); err != nil || th != 1 {
			t.Fatalf("MessageThread = %d, %v", th, err)
		}
		if _, err := st.MessageThread(ctx, 99); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("MessageThread(99) = %v", err)
		}
	})
}

// The inbox index is sparse and moves with the thread: a Put that drops
// awaiting removes the entry, one that changes it moves it.
func TestAwaitingFollowsTheThread(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	base := time.UnixMilli(1_700_000_000_000)
	bob := core.Awaiting{Scope: core.AwaitParty, Party: core.Party{Identity: "ainotes:bob"}}
	anyCall := core.Awaiting{Scope: core.AwaitAny, Party: core.Party{Identity: "ainotes:a"}}
	keepAll := func(core.Thread) bool { return true }
	for i := int64(1); i <= 7; i++ {
		aw := anyCall
		if i%2 == 0 {
			aw = bob
		}
		if err := st.Commit(ctx, core.Commit{Thread: thread(i, 1, aw, base.Add(time.Duration(i)*time.Millisecond))}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(ths []core.Thread) string {
		s := ""
		for _, th := range ths {
			s += fmt.Sprint(th.ID, " ")
		}
		return s
	}
	var all []core.Thread
	pos := ""
	for round := 0; round < 10; round++ {
		page, next, err := st.Awaiting(ctx, core.AwaitingQuery{Identity: "ainotes:bob", After: pos, Limit: 2, Keep: keepAll})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		pos = next
	}
	if got := ids(all); got != "1 2 3 4 5 6 7 " {
		t.Fatalf("paged inbox = %q, want every thread once in order", got)
	}
	// Thread 2 stops awaiting bob; thread 3 now awaits bob, later.
	if err := st.Commit(ctx, core.Commit{Thread: thread(2, 2, core.Awaiting{}, base.Add(time.Second)), PrevVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, core.Commit{Thread: thread(3, 2, bob, base.Add(time.Second)), PrevVersion: 1}); err != nil {
		t.Fatal(err)
	}
	got, _, err := st.Awaiting(ctx, core.AwaitingQuery{Identity: "ainotes:bob", Limit: 50, Keep: keepAll})
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "1 4 5 6 7 3 " {
		t.Fatalf("after the change = %q", ids(got))
	}
	onlyParty := func(th core.Thread) bool { return th.Awaiting.Scope == core.AwaitParty }
	got, _, _ = st.Awaiting(ctx, core.AwaitingQuery{Identity: "ainotes:bob", Limit: 1, Keep: onlyParty})
	if ids(got) != "4 " {
		t.Fatalf("filtered first page = %q, want 4", ids(got))
	}
}
