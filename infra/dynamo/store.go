// Package dynamo is Parley's one store: core.Store on DynamoDB, single-table.
// docs/storage.md lists every item type, index and request made here.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// Store implements core.Store.
type Store struct {
	db    *dynamodb.Client
	table string
	clock core.Clock
}

var _ core.Store = (*Store)(nil)

// New returns a store on an existing table.
func New(db *dynamodb.Client, table string, clock core.Clock) (*Store, error) {
	if db == nil || table == "" {
		return nil, errors.New("dynamo: a client and a table name are required")
	}
	if clock == nil {
		clock = core.SystemClock{}
	}
	return &Store{db: db, table: table, clock: clock}, nil
}

func (s *Store) key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}
}

// --- tokens

// Token reads a token by hash (strongly consistent, so a revoke is seen at once).
func (s *Store) Token(ctx context.Context, hash string) (core.Token, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.key("tok#"+hash, tokenSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return core.Token{}, err
	}
	if len(out.Item) == 0 {
		return core.Token{}, core.ErrNotFound
	}
	return decodeToken(out.Item), nil
}

// PutToken stores a token, replacing one with the same hash.
func (s *Store) PutToken(ctx context.Context, t core.Token) error {
	it := item{"pk": str("tok#" + t.Hash), "sk": str(tokenSK)}
	it.setS("tid", t.ID)
	it.setS("hash", t.Hash)
	it.setS("ident", t.Identity)
	rights := make([]string, len(t.Rights))
	for i, r := range t.Rights {
		rights[i] = string(r)
	}
	it.setS("rights", strings.Join(rights, ","))
	it.setS("label", t.Label)
	it.setT("cat", t.CreatedAt)
	if t.RevokedAt != nil {
		it.setT("rev", *t.RevokedAt)
	}
	it.setS("ls_pk", tokensAll)
	it.setS("ls_sk", t.ID)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it})
	return err
}

func decodeToken(it item) core.Token {
	t := core.Token{ID: it.s("tid"), Hash: it.s("hash"), Identity: it.s("ident"), Label: it.s("label"), CreatedAt: it.t("cat"), RevokedAt: it.tp("rev")}
	for _, r := range strings.Split(it.s("rights"), ",") {
		if r != "" {
			t.Rights = append(t.Rights, core.Right(r))
		}
	}
	return t
}

// Tokens lists every token through the list index.
func (s *Store) Tokens(ctx context.Context) ([]core.Token, error) {
	var out []core.Token
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String(IndexList),
		KeyConditionExpression:    aws.String("ls_pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": str(tokensAll)},
	})
	var keys []map[string]types.AttributeValue
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			keys = append(keys, s.key(item(it).s("pk"), item(it).s("sk")))
		}
	}
	items, err := s.batchGet(ctx, false, keys)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		out = append(out, decodeToken(it))
	}
	return out, nil
}

// batchGet reads items by key in the order of keys, 100 keys per
// BatchGetItem; missing items are left out. Listings read eventually
// consistent (half the price): the index they page through is eventually
// consistent anyway; a post's reads before its write are strongly consistent.
func (s *Store) batchGet(ctx context.Context, consistent bool, keys []map[string]types.AttributeValue) ([]item, error) {
	found := map[string]item{}
	for start := 0; start < len(keys); start += 100 {
		req := map[string]types.KeysAndAttributes{s.table: {Keys: keys[start:min(start+100, len(keys))], ConsistentRead: aws.Bool(consistent)}}
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 5 {
				return nil, errors.New("dynamo: BatchGetItem left keys unprocessed")
			}
			out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, err
			}
			for _, it := range out.Responses[s.table] {
				found[shadowKey(it)] = it
			}
			req = out.UnprocessedKeys
		}
	}
	out := make([]item, 0, len(keys))
	for _, k := range keys {
		if it, ok := found[shadowKey(k)]; ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// RevokeToken marks a token revoked by its hash; the token must exist.
func (s *Store) RevokeToken(ctx context.Context, hash string, at time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: s.key("tok#"+hash, tokenSK),
		UpdateExpression:          aws.String("SET rev = :at"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(at.UTC().Format(time.RFC3339Nano))},
	})
	var missing *types.ConditionalCheckFailedException
	if errors.As(err, &missing) {
		return core.ErrNotFound
	}
	return err
}

// --- ids

// NextIDs reserves a block of a sequence with one atomic ADD.
func (s *Store) NextIDs(ctx context.Context, seq string, n int64) (int64, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: s.key("seq#"+seq, seqSK),
		UpdateExpression:          aws.String("ADD n :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(n)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, err
	}
	last := item(out.Attributes).n("n")
	if last < n {
		return 0, fmt.Errorf("dynamo: counter %s returned %d", seq, last)
	}
	return last, nil
}

// --- threads and messages

func encodeThread(t core.Thread) item {
	it := item{"pk": str(threadPK(t.ID)), "sk": str(threadSK)}
	it.setN("id", t.ID)
	it.setS("cr_id", t.Creator.Identity)
	it.setS("cr_ext", t.Creator.Extension)
	it.setT("cat", t.CreatedAt)
	it.setT("uat", t.UpdatedAt)
	it.setS("title", t.Title)
	it.setN("r_id", t.Root.ID)
	it.setS("r_kind", string(t.Root.Kind))
	it.setN("msgs", int64(t.Messages))
	it.setN("ver", t.Version)
	it.setS("st", string(t.State))
	it.setS("org", string(t.Origin))
	if t.ConfirmedAt != nil {
		it.setT("cfa", *t.ConfirmedAt)
	}
	it.setS("lbl", t.Label)
	it.setS("sby", t.StateBy)
	it.setT("sat", t.StateAt)
	recent := make([]string, len(t.Recent))
	for i, p := range t.Recent {
		recent[i] = p.Identity + "/" + p.Extension
	}
	it.setS("rc", strings.Join(recent, "|"))
	it.setS("st_pk", "state#"+string(t.State))
	it.setS("st_sk", pad12(t.ID))
	it.setS("ls_pk", threadsAll)
	it.setS("ls_sk", pad12(t.ID))
	if a := t.Awaiting; a.Scope != core.AwaitNone {
		it.setS("aw", string(a.Scope))
		it.setS("aw_id", a.Party.Identity)
		it.setS("aw_ext", a.Party.Extension)
		it.setT("awat", t.AwaitingAt)
		// The inbox index is sparse: only threads that await someone are in it.
		if a.Scope == core.AwaitParty {
			it.setS("ib_pk", "aw#"+a.Party.Identity)
		} else {
			it.setS("ib_pk", awaitBroad)
		}
		it.setN("awv", t.AwaitingVersion)
		it.setS("ib_sk", orderKey(t.AwaitingAt, t.ID, t.AwaitingVersion))
	}
	return it
}

func decodeThread(it item) core.Thread {
	t := core.Thread{
		ID: it.n("id"), Creator: core.Party{Identity: it.s("cr_id"), Extension: it.s("cr_ext")},
		CreatedAt: it.t("cat"), UpdatedAt: it.t("uat"), Title: it.s("title"),
		Messages: int(it.n("msgs")), Version: it.n("ver"),
		State: core.State(it.s("st")), Origin: core.Origin(it.s("org")), ConfirmedAt: it.tp("cfa"),
		Label: it.s("lbl"), StateBy: it.s("sby"), StateAt: it.t("sat"),
		Awaiting:   core.Awaiting{Scope: core.AwaitScope(it.s("aw")), Party: core.Party{Identity: it.s("aw_id"), Extension: it.s("aw_ext")}},
		AwaitingAt: it.t("awat"), AwaitingVersion: it.n("awv"),
	}
	if rc := it.s("rc"); rc != "" {
		for _, p := range strings.Split(rc, "|") {
			id, ext, _ := strings.Cut(p, "/")
			t.Recent = append(t.Recent, core.Party{Identity: id, Extension: ext})
		}
	}
	// The root's author is the creator; an ask root is its own asker.
	t.Root = core.Message{ID: it.n("r_id"), Thread: t.ID, Kind: core.Kind(it.s("r_kind")), From: t.Creator, Depth: 1}
	if t.Root.Kind == core.KindAsk {
		t.Root.Asker = t.Creator
	}
	return t
}

func encodeMessage(m core.Message) item {
	it := item{"pk": str(threadPK(m.Thread)), "sk": str(messageSK(m.ID))}
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
	it.setS("id_pk", core.MessageKey(m.ID))
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

func encodeEvent(e core.Event) item {
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
	it.setS("ev_sk", orderKey(e.At, e.Thread, e.Seq))
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
		return core.Thread{}, err
	}
	if len(out.Item) == 0 {
		return core.Thread{}, core.ErrNotFound
	}
	return decodeThread(out.Item), nil
}

// ThreadAndMessage reads the thread and a message of it in one BatchGetItem.
func (s *Store) ThreadAndMessage(ctx context.Context, thread, msg int64) (core.Thread, core.Message, error) {
	got, err := s.batchGet(ctx, true, []map[string]types.AttributeValue{s.key(threadPK(thread), threadSK), s.key(threadPK(thread), messageSK(msg))})
	if err != nil {
		return core.Thread{}, core.Message{}, err
	}
	var th core.Thread
	var m core.Message
	found := false
	for _, it := range got {
		if item(it).s("sk") == threadSK {
			th, found = decodeThread(it), true
		} else {
			m = decodeMessage(it)
		}
	}
	if !found {
		return th, m, core.ErrNotFound
	}
	return th, m, nil
}

// MessageThread finds a message's thread through the id index.
func (s *Store) MessageThread(ctx context.Context, msg int64) (int64, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String(IndexID),
		KeyConditionExpression:    aws.String("id_pk = :id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(core.MessageKey(msg))},
	})
	if err != nil {
		return 0, err
	}
	if len(out.Items) == 0 {
		return 0, core.ErrNotFound
	}
	return strconv.ParseInt(strings.TrimPrefix(item(out.Items[0]).s("pk"), "th_"), 10, 64)
}

// ThreadMessages reads the thread and its messages with one Query per page:
// message items ("m#…") sort just before the thread item ("t").
func (s *Store) ThreadMessages(ctx context.Context, id int64) (core.Thread, []core.Message, error) {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(threadPK(id)), ":lo": str("m#"), ":hi": str(threadSK),
		},
	})
	var th core.Thread
	var msgs []core.Message
	found := false
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return th, nil, err
		}
		for _, it := range page.Items {
			if item(it).s("sk") == threadSK {
				th, found = decodeThread(it), true
			} else {
				msgs = append(msgs, decodeMessage(it))
			}
		}
	}
	if !found {
		return th, nil, core.ErrNotFound
	}
	return th, msgs, nil
}

// --- the one write

// Commit writes a thread change as one TransactWriteItems: the thread Put
// conditioned on the version it was read at, with the message, the event and
// the idempotency record each conditioned on not existing.
func (s *Store) Commit(ctx context.Context, c core.Commit) error {
	threadCond := "attribute_not_exists(pk)"
	vals := map[string]types.AttributeValue{}
	if c.PrevVersion > 0 {
		threadCond = "ver = :prev"
		vals[":prev"] = num(c.PrevVersion)
	}
	// The thread item is always written whole: the embedded server mishandles
	// UpdateItem that adds or drops GSI keys, and a Put is one write either way.
	put := &types.Put{TableName: &s.table, Item: encodeThread(c.Thread), ConditionExpression: aws.String(threadCond)}
	if len(vals) > 0 {
		put.ExpressionAttributeValues = vals
	}
	items := []types.TransactWriteItem{{Put: put}}
	fresh := aws.String("attribute_not_exists(pk)")
	if c.Message != nil {
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: encodeMessage(*c.Message), ConditionExpression: fresh}})
	}
	if c.Event != nil {
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: encodeEvent(*c.Event), ConditionExpression: fresh}})
	}
	for _, ch := range c.Claims {
		items = append(items, s.claimWrites(ch)...)
	}
	dedupeAt := -1
	if c.Dedupe != "" {
		dedupeAt = len(items)
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: &s.table, Item: item{"pk": str(threadPK(c.Thread.ID)), "sk": str("d#" + c.Dedupe)}, ConditionExpression: fresh,
		}})
	}
	idemAt := -1
	if c.Idempotency != nil {
		idemAt = len(items)
		it := item{"pk": str("idem#" + c.Idempotency.Key), "sk": str(idemSK)}
		it.setS("res", string(c.Idempotency.Result))
		it.setN(TTLAttribute, c.Idempotency.Expires.Unix())
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: &s.table, Item: it,
			// An expired record that TTL has not swept yet may be reused.
			ConditionExpression:       aws.String("attribute_not_exists(pk) OR #exp < :now"),
			ExpressionAttributeNames:  map[string]string{"#exp": TTLAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(s.clock.Now().Unix())},
		}})
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return classifyTransact(err, map[int]error{idemAt: core.ErrExists, dedupeAt: core.ErrDuplicate})
}

// classifyTransact turns a cancelled transaction into the store errors the
// service understands: a failed condition on one of the marked items →
// its error (idempotency record → ErrExists, dedupe → ErrDuplicate); the thread's or a claim's version, or a
// conflicting transaction → ErrConflict.
func classifyTransact(err error, marked map[int]error) error {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return err
	}
	for i, r := range tce.CancellationReasons {
		if e, ok := marked[i]; ok && i >= 0 && aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return e
		}
	}
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed", "TransactionConflict":
			return core.ErrConflict
		}
	}
	return err
}

// Idempotent reads a stored post result; an expired one counts as absent.
func (s *Store) Idempotent(ctx context.Context, key string) ([]byte, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.key("idem#"+key, idemSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	it := item(out.Item)
	if len(it) == 0 || it.n(TTLAttribute) < s.clock.Now().Unix() {
		return nil, core.ErrNotFound
	}
	return []byte(it.s("res")), nil
}

// --- listings

// Threads pages through the state index or the list index, newest first.
func (s *Store) Threads(ctx context.Context, q core.ThreadQuery) ([]core.Thread, string, error) {
	index, pkAttr, skAttr, pk := IndexList, "ls_pk", "ls_sk", threadsAll
	if q.State != "" {
		index, pkAttr, skAttr, pk = IndexState, "st_pk", "st_sk", "state#"+string(q.State)
	}
	in := &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String(index), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(q.Limit)),
		KeyConditionExpression:    aws.String(pkAttr + " = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
	}
	if q.After != "" {
		in.KeyConditionExpression = aws.String(pkAttr + " = :pk AND " + skAttr + " < :after")
		in.ExpressionAttributeValues[":after"] = str(q.After)
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, "", err
	}
	keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
	for _, it := range out.Items {
		keys = append(keys, s.key(item(it).s("pk"), threadSK))
	}
	items, err := s.batchGet(ctx, false, keys)
	if err != nil {
		return nil, "", err
	}
	ths := make([]core.Thread, 0, len(items))
	for _, it := range items {
		ths = append(ths, decodeThread(it))
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 && len(out.Items) > 0 {
		next = item(out.Items[len(out.Items)-1]).s(skAttr)
	}
	return ths, next, nil
}

// Events pages through one thread's events (table query) or all events
// (events index), oldest first. The position is "<thread>:<seq>" or the order key.
func (s *Store) Events(ctx context.Context, q core.EventQuery) ([]core.Event, string, error) {
	in := &dynamodb.QueryInput{TableName: &s.table, Limit: aws.Int32(int32(q.Limit))}
	if q.Thread != 0 {
		from := int64(0)
		if q.After != "" {
			_, seq, _ := strings.Cut(q.After, ":")
			from, _ = strconv.ParseInt(seq, 10, 64)
		}
		in.ConsistentRead = aws.Bool(true)
		in.KeyConditionExpression = aws.String("pk = :pk AND sk BETWEEN :lo AND :hi")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":pk": str(threadPK(q.Thread)), ":lo": str(eventSK(from + 1)), ":hi": str("e#9999999999"),
		}
	} else {
		in.IndexName = aws.String(IndexEvents)
		in.KeyConditionExpression = aws.String("ev_pk = :pk")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":pk": str(eventsAll)}
		if q.After != "" {
			in.KeyConditionExpression = aws.String("ev_pk = :pk AND ev_sk > :after")
			in.ExpressionAttributeValues[":after"] = str(q.After)
		}
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, "", err
	}
	items := out.Items
	if q.Thread == 0 { // the events index holds keys only
		keys := make([]map[string]types.AttributeValue, 0, len(items))
		for _, it := range items {
			keys = append(keys, s.key(item(it).s("pk"), item(it).s("sk")))
		}
		got, err := s.batchGet(ctx, false, keys)
		if err != nil {
			return nil, "", err
		}
		items = make([]map[string]types.AttributeValue, len(got))
		for i, it := range got {
			items[i] = it
		}
	}
	evs := make([]core.Event, 0, len(items))
	for _, it := range items {
		evs = append(evs, decodeEvent(it))
	}
	next := ""
	if n := len(evs); n > 0 {
		last := evs[n-1]
		if q.Thread != 0 {
			next = pad12(q.Thread) + ":" + pad10(last.Seq)
		} else {
			next = orderKey(last.At, last.Thread, last.Seq)
		}
	}
	return evs, next, nil
}

// Awaiting merges two partitions of the inbox index, the caller's identity
// and the broad one, in order-key order. Each round reads one page of each
// from the last position handed out; only entries up to the smaller last key
// of a partition that has more are safe to hand out, so the merge never skips
// one. A further round is needed only when Keep dropped entries.
func (s *Store) Awaiting(ctx context.Context, q core.AwaitingQuery) ([]core.Thread, string, error) {
	parts := []string{"aw#" + q.Identity, awaitBroad}
	pos := q.After
	var keys []map[string]types.AttributeValue
	for len(keys) < q.Limit {
		type entry struct {
			key, pk string
			th      core.Thread
		}
		var merged []entry
		bound := ""
		more := false
		for _, pk := range parts {
			in := &dynamodb.QueryInput{
				TableName: &s.table, IndexName: aws.String(IndexAwaiting), Limit: aws.Int32(int32(q.Limit)),
				KeyConditionExpression:    aws.String("ib_pk = :pk AND ib_sk > :after"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":after": str(pos)},
			}
			out, err := s.db.Query(ctx, in)
			if err != nil {
				return nil, "", err
			}
			for _, it := range out.Items {
				// The index holds the keys and what Keep looks at.
				e := entry{key: item(it).s("ib_sk"), pk: item(it).s("pk")}
				e.th.Awaiting = core.Awaiting{Scope: core.AwaitScope(item(it).s("aw")), Party: core.Party{Identity: item(it).s("aw_id"), Extension: item(it).s("aw_ext")}}
				merged = append(merged, e)
			}
			if len(out.LastEvaluatedKey) > 0 && len(out.Items) > 0 {
				last := item(out.Items[len(out.Items)-1]).s("ib_sk")
				if !more || last < bound {
					bound = last
				}
				more = true
			}
		}
		if len(merged) == 0 {
			break
		}
		sort.Slice(merged, func(i, j int) bool { return merged[i].key < merged[j].key })
		for _, e := range merged {
			if (more && e.key > bound) || len(keys) == q.Limit {
				break
			}
			pos = e.key
			if q.Keep(e.th) {
				keys = append(keys, s.key(e.pk, threadSK))
			}
		}
		if !more {
			break
		}
	}
	if pos == q.After {
		pos = ""
	}
	items, err := s.batchGet(ctx, false, keys)
	if err != nil {
		return nil, "", err
	}
	kept := make([]core.Thread, 0, len(items))
	for _, it := range items {
		kept = append(kept, decodeThread(it))
	}
	return kept, pos, nil
}

// ReserveRate adds n to a rate counter with one conditional UpdateItem.
func (s *Store) ReserveRate(ctx context.Context, key string, n, limit int, expires time.Time) (bool, error) {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: s.key("rate#"+key, "rate"),
		UpdateExpression:          aws.String("ADD n :n SET #exp = :exp"),
		ConditionExpression:       aws.String("attribute_not_exists(n) OR n <= :room"),
		ExpressionAttributeNames:  map[string]string{"#exp": TTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(n)), ":room": num(int64(limit - n)), ":exp": num(expires.Unix())},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return false, nil
	}
	return err == nil, err
}
