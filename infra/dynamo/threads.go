package dynamo

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// encodeThread gives the thread item. stamp is the commit's stamp: the
// inbox and queue entries that this version sets are ordered by it.
func encodeThread(t core.Thread, stamp time.Time) item {
	it := item{"pk": str(threadPK(t.ID)), "sk": str(threadSK)}
	it.setN("id", t.ID)
	it.setS("cr_id", t.Creator.Identity)
	it.setS("cr_ext", t.Creator.Extension)
	it.setT("cat", t.CreatedAt)
	it.setT("uat", t.UpdatedAt)
	it.setS("title", t.Title)
	it.setS("r_kind", string(t.RootKind))
	it.setN("msgs", int64(t.Messages))
	it.setN("ver", t.Version)
	it.setS("st", string(t.State))
	it.setS("org", string(t.Origin))
	if t.ConfirmedAt != nil {
		it.setT("cfa", *t.ConfirmedAt)
		it.setS("cfb", string(t.ConfirmedBy))
	}
	it.setS("lbl", t.Label)
	it.setS("sby", t.StateBy)
	it.setT("sat", t.StateAt)
	if t.StateMsg != 0 {
		it.setN("smsg", t.StateMsg)
	}
	it.setS("rc", strings.Join(t.Recent, "|"))
	it.setS("st_pk", "state#"+string(t.State))
	it.setS("st_sk", pad15(t.ID))
	it.setS("ls_pk", threadsAll)
	it.setS("ls_sk", pad15(t.ID))
	it.setN("awv", t.AwaitingVersion)
	if t.AwaitingMsg != 0 {
		it.setN("awm", t.AwaitingMsg)
	}
	// A version that set awaiting is stamped now; a zero time (a thread not
	// read from the store) never becomes a key.
	awat := t.AwaitingAt
	if t.AwaitingVersion == t.Version || awat.IsZero() {
		awat = stamp
	}
	it.setT("awat", awat)
	if a := t.Awaiting; a.Scope != core.AwaitNone {
		it.setS("aw", string(a.Scope))
		it.setS("aw_id", a.Party.Identity)
		it.setS("aw_ext", a.Party.Extension)
		// The inbox index is sparse: only threads that await someone are in it.
		switch a.Scope {
		case core.AwaitParty:
			it.setS("ib_pk", awaitPK(a.Party.Identity))
		case core.AwaitAny:
			it.setS("ib_pk", awaitAny)
		case core.AwaitHuman:
			it.setS("ib_pk", awaitHuman)
		}
		it.setS("ib_sk", orderKey(awat, t.ID, t.AwaitingVersion))
	}
	if t.QueueVersion != 0 {
		qat := t.QueuedAt
		if t.QueueVersion == t.Version || qat.IsZero() {
			qat = stamp
		}
		it.setN("qv", t.QueueVersion)
		it.setT("qat", qat)
		// The queue index is sparse too: threads that need a moderator.
		it.setS("qu_pk", queueAll)
		it.setS("qu_sk", orderKey(qat, t.ID, t.QueueVersion))
	}
	return it
}

func decodeThread(it item) core.Thread {
	t := core.Thread{
		ID: it.n("id"), Creator: core.Party{Identity: it.s("cr_id"), Extension: it.s("cr_ext")},
		CreatedAt: it.t("cat"), UpdatedAt: it.t("uat"), Title: it.s("title"),
		Messages: int(it.n("msgs")), Version: it.n("ver"),
		State: core.State(it.s("st")), Origin: core.Origin(it.s("org")), ConfirmedAt: it.tp("cfa"), ConfirmedBy: core.Confirmer(it.s("cfb")),
		Label: it.s("lbl"), StateBy: it.s("sby"), StateAt: it.t("sat"), StateMsg: it.n("smsg"),
		Awaiting:   core.Awaiting{Scope: core.AwaitScope(it.s("aw")), Party: core.Party{Identity: it.s("aw_id"), Extension: it.s("aw_ext")}},
		AwaitingAt: it.t("awat"), AwaitingVersion: it.n("awv"), AwaitingMsg: it.n("awm"),
		QueueVersion: it.n("qv"), QueuedAt: it.t("qat"),
	}
	if rc := it.s("rc"); rc != "" {
		for _, p := range strings.Split(rc, "|") {
			id, _, _ := strings.Cut(p, "/") // an older item kept the extension after a slash
			t.Recent = append(t.Recent, id)
		}
	}
	t.RootKind = core.Kind(it.s("r_kind"))
	return t
}

func messageKey(id int64) (string, string) {
	th, ord := core.MessageParts(id)
	return threadPK(th), messageSK(ord)
}

func encodeMessage(m core.Message) item {
	pk, sk := messageKey(m.ID)
	it := item{"pk": str(pk), "sk": str(sk)}
	it.setN("id", m.ID)
	it.setN("th", m.Thread)
	if m.Parent != 0 {
		it.setN("par", m.Parent)
	}
	it.setS("kind", string(m.Kind))
	it.setS("f_id", m.From.Identity)
	it.setS("f_ext", m.From.Extension)
	it.setS("ak", m.AuthorKind)
	it.setS("body", m.Body)
	if m.Provenance != nil {
		it.setS("p_model", m.Provenance.Model)
		it.setS("p_client", m.Provenance.Client)
	}
	it.setT("cat", m.CreatedAt)
	it.setN("dep", int64(m.Depth))
	it.setS("as_id", m.Asker.Identity)
	it.setS("as_ext", m.Asker.Extension)
	if m.Claim != 0 {
		it.setN("cl", m.Claim)
		it.setS("cst", string(m.ClaimState))
		if m.ClaimValidUntil != nil {
			it.setT("cvu", *m.ClaimValidUntil)
		}
	}
	it.setEvidence("ev", m.Evidence)
	it.setIDs("sup", m.Supersedes)
	return it
}

func decodeMessage(it item) core.Message {
	m := core.Message{
		ID: it.n("id"), Thread: it.n("th"), Parent: it.n("par"), Kind: core.Kind(it.s("kind")),
		From: core.Party{Identity: it.s("f_id"), Extension: it.s("f_ext")}, AuthorKind: it.s("ak"),
		Body: it.s("body"), CreatedAt: it.t("cat"), Depth: int(it.n("dep")),
		Asker: core.Party{Identity: it.s("as_id"), Extension: it.s("as_ext")},
	}
	if it.s("p_model") != "" || it.s("p_client") != "" {
		m.Provenance = &core.Provenance{Model: it.s("p_model"), Client: it.s("p_client")}
	}
	m.Claim, m.ClaimState, m.ClaimValidUntil = it.n("cl"), core.ClaimState(it.s("cst")), it.tp("cvu")
	m.Evidence, m.Supersedes = it.evidence("ev"), it.ids("sup")
	return m
}

func encodeEvent(e core.Event, stamp time.Time) item {
	it := item{"pk": str(threadPK(e.Thread)), "sk": str(eventSK(e.Seq))}
	it.setN("th", e.Thread)
	it.setN("seq", e.Seq)
	it.setS("from", string(e.From))
	it.setS("to", string(e.To))
	it.setS("org", string(e.Origin))
	it.setS("actor", e.Actor)
	it.setS("lbl", e.Label)
	it.setT("at", e.At)
	it.setB("cf", e.Confirmed)
	it.setS("cause", e.Cause)
	it.setS("ev_pk", eventsAll)
	it.setS("ev_sk", orderKey(stamp, e.Thread, e.Seq))
	return it
}

func decodeEvent(it item) core.Event {
	return core.Event{
		Thread: it.n("th"), Seq: it.n("seq"), From: core.State(it.s("from")), To: core.State(it.s("to")),
		Origin: core.Origin(it.s("org")), Actor: it.s("actor"), Label: it.s("lbl"), At: it.t("at"),
		Confirmed: it.b("cf"), Cause: it.s("cause"),
	}
}

// Thread reads one thread item, strongly consistent.
func (s *Store) Thread(ctx context.Context, id int64) (core.Thread, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.key(threadPK(id), threadSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return core.Thread{}, fail("GetItem thread", err)
	}
	if len(out.Item) == 0 {
		return core.Thread{}, core.ErrNotFound
	}
	return decodeThread(out.Item), nil
}

// ThreadAndMessage reads the thread and a message of it in one
// BatchGetItem, strongly consistent.
func (s *Store) ThreadAndMessage(ctx context.Context, thread, msg int64) (core.Thread, core.Message, error) {
	pk, sk := messageKey(msg)
	got, err := s.batchGet(ctx, true, []map[string]types.AttributeValue{s.key(threadPK(thread), threadSK), s.key(pk, sk)})
	if err != nil {
		return core.Thread{}, core.Message{}, err
	}
	th, ok := got[threadPK(thread)+"\x00"+threadSK]
	if !ok {
		return core.Thread{}, core.Message{}, core.ErrNotFound
	}
	var m core.Message
	if it, ok := got[pk+"\x00"+sk]; ok {
		m = decodeMessage(it)
	}
	return decodeThread(th), m, nil
}

// Messages reads a page of a thread's messages, in order of creation (the
// ordinal in the sort key), and the thread item. One Query reads the
// messages after the position up to and including the thread item ("t"
// sorts after "m#…"), so the last page costs one request; a page that stops
// before it reads the thread with one GetItem.
func (s *Store) Messages(ctx context.Context, q core.MessageQuery) (core.Thread, []core.Message, bool, error) {
	from := 1
	if q.After != 0 {
		_, ord := core.MessageParts(q.After)
		from = ord + 1
	}
	in := &dynamodb.QueryInput{
		TableName: &s.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(threadPK(q.Thread)), ":lo": str(messageSK(from)), ":hi": str(threadSK),
		},
	}
	var msgs []core.Message
	var th *core.Thread
	more := false
	for {
		in.Limit = aws.Int32(int32(q.Limit + 1 - len(msgs)))
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return core.Thread{}, nil, false, fail("Query messages", err)
		}
		for _, it := range page.Items {
			if item(it).s("sk") == threadSK {
				t := decodeThread(it)
				th = &t
				continue
			}
			if len(msgs) == q.Limit {
				more = true
				break
			}
			msgs = append(msgs, decodeMessage(it))
		}
		if more || th != nil || len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	if th == nil {
		t, err := s.Thread(ctx, q.Thread)
		if err != nil {
			return core.Thread{}, nil, false, err
		}
		th = &t
	}
	return *th, msgs, more, nil
}

// MessagesByID reads messages of any threads with one BatchGetItem,
// strongly consistent; the result follows ids, missing ones left out.
func (s *Store) MessagesByID(ctx context.Context, ids []int64) ([]core.Message, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(ids))
	for _, id := range ids {
		pk, sk := messageKey(id)
		keys = append(keys, s.key(pk, sk))
	}
	got, err := s.batchGet(ctx, true, keys)
	if err != nil {
		return nil, err
	}
	out := make([]core.Message, 0, len(ids))
	for _, k := range keys {
		if it, ok := got[itemKey(k)]; ok {
			out = append(out, decodeMessage(it))
		}
	}
	return out, nil
}
