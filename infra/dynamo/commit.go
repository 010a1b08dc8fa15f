package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// Commit writes a thread change as one TransactWriteItems: the thread Put
// conditioned on the version it was read at, with the message, the event,
// the claims, the duplicate marker and the idempotency record each
// conditioned on not existing (or on their version).
//
// Feed order: the commit is stamped with the clock just before the write,
// and the write (the SDK's retries included) must finish within the commit
// timeout; so an entry is visible in its index at most FeedSettle after its
// stamp, which is what feed readers wait out.
//
// A lost race returns *core.Conflict carrying the thread as the failed
// condition saw it (ReturnValuesOnConditionCheckFailure), so the retry
// needs no read.
func (s *Store) Commit(ctx context.Context, c core.Commit) error {
	ctx, cancel := context.WithTimeout(ctx, s.commit)
	defer cancel()
	stamp := s.clock.Now()
	threadCond := "attribute_not_exists(pk)"
	vals := map[string]types.AttributeValue{}
	if c.PrevVersion > 0 {
		threadCond = "ver = :prev"
		vals[":prev"] = num(c.PrevVersion)
	}
	// The thread item is always written whole: the embedded server mishandles
	// UpdateItem that adds or drops GSI keys, and a Put is one write either way.
	put := &types.Put{
		TableName: &s.table, Item: encodeThread(c.Thread, stamp), ConditionExpression: aws.String(threadCond),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if len(vals) > 0 {
		put.ExpressionAttributeValues = vals
	}
	items := []types.TransactWriteItem{{Put: put}}
	fresh := aws.String("attribute_not_exists(pk)")
	if c.Message != nil {
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: encodeMessage(*c.Message), ConditionExpression: fresh}})
	}
	if c.Event != nil {
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: encodeEvent(*c.Event, stamp), ConditionExpression: fresh}})
	}
	for _, ch := range c.Claims {
		items = append(items, s.claimWrites(ch)...)
	}
	for _, th := range c.Open {
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: &s.table, Key: s.key(threadPK(th), threadSK),
			ConditionExpression:       aws.String("attribute_exists(pk) AND NOT (st = :closed AND attribute_exists(cfa))"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":closed": str(string(core.StateClosed))},
		}})
	}
	dedupeAt := -1
	if c.Dedupe != "" {
		dedupeAt = len(items)
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: &s.table, Item: item{"pk": str(threadPK(c.Thread.ID)), "sk": str("d#" + c.Dedupe)}, ConditionExpression: fresh,
		}})
	}
	idemAt := -1
	if r := c.Idempotency; r != nil {
		idemAt = len(items)
		it := item{"pk": str("idem#" + r.Key), "sk": str(idemSK)}
		it.setS("rh", r.Request)
		it.setN("th", r.Thread)
		it.setN("msg", r.Message)
		if r.Claim != 0 {
			it.setN("cl", r.Claim)
		}
		it.setN(TTLAttribute, r.Expires.Unix())
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: &s.table, Item: it,
			// An expired record that TTL has not swept yet may be reused.
			ConditionExpression:       aws.String("attribute_not_exists(pk) OR #exp < :now"),
			ExpressionAttributeNames:  map[string]string{"#exp": TTLAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(stamp.Unix())},
		}})
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return classifyTransact(err, map[int]error{idemAt: core.ErrExists, dedupeAt: core.ErrDuplicate})
}

// classifyTransact turns a cancelled transaction into the errors core
// understands, by the cancellation reason of each item: a failed condition
// on a marked item → its error (idempotency record → ErrExists, duplicate
// marker → ErrDuplicate); on the thread (item 0) or a claim, or a
// conflicting transaction → *core.Conflict; throttling → unavailable; a
// validation error is a bug and stays one.
func classifyTransact(err error, marked map[int]error) error {
	tce, ok := errors.AsType[*types.TransactionCanceledException](err)
	if !ok {
		return fail("TransactWriteItems", err)
	}
	// The idempotency record first: when it exists this post was stored
	// already (a lost response retried), whatever else failed with it.
	for _, want := range []error{core.ErrExists, core.ErrDuplicate, core.ErrNotFound, core.ErrFull} {
		for i, r := range tce.CancellationReasons {
			if e, ok := marked[i]; ok && i >= 0 && e == want && aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return e
			}
		}
	}
	conflict := &core.Conflict{}
	lost := false
	for i, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed":
			lost = true
			if i == 0 && len(r.Item) > 0 {
				th := decodeThread(r.Item)
				conflict.Current = &th
			}
		case "TransactionConflict":
			lost = true
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", "InternalServerError":
			return fmt.Errorf("dynamo TransactWriteItems: %w: %s", core.ErrUnavailable, aws.ToString(r.Code))
		}
	}
	if lost {
		return conflict
	}
	return fmt.Errorf("dynamo TransactWriteItems: %w", err)
}

// Idempotent reads an idempotency record; an expired one counts as absent.
func (s *Store) Idempotent(ctx context.Context, key string) (core.Idempotency, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.key("idem#"+key, idemSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return core.Idempotency{}, fail("GetItem idempotency", err)
	}
	it := item(out.Item)
	if len(it) == 0 || it.n(TTLAttribute) < s.clock.Now().Unix() {
		return core.Idempotency{}, core.ErrNotFound
	}
	return core.Idempotency{
		Key: key, Request: it.s("rh"), Thread: it.n("th"), Message: it.n("msg"), Claim: it.n("cl"),
		Expires: time.Unix(it.n(TTLAttribute), 0),
	}, nil
}
