package dynamo

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// Subscriptions (the push profile) live under pk = sub#<id>, sk = sub. The
// list index holds them all (ls_pk = subs), the state index a token's
// (st_pk = subs#<token id>); both keys only.

const (
	subSK   = "sub"
	subsAll = "subs"
)

// A token's count of subscriptions, its bound kept by a condition.
const subCountSK = "count"

func subCountKey(tokenID string) string { return "subcount#" + tokenID }
func subKey(id string) string           { return "sub#" + id }
func subsOfToken(tokenID string) string { return "subs#" + tokenID }
func (s *Store) subItemKey(id string) map[string]types.AttributeValue {
	return s.key(subKey(id), subSK)
}

func encodeSubscription(sub core.Subscription) item {
	it := item{"pk": str(subKey(sub.ID)), "sk": str(subSK)}
	it.setS("id", sub.ID)
	it.setS("tid", sub.TokenID)
	it.setS("tkh", sub.TokenHash)
	it.setS("ident", sub.Identity)
	it.setS("url", sub.URL)
	it.setS("evs", strings.Join(sub.Events, ","))
	if sub.Thread != 0 {
		it.setN("thr", sub.Thread)
	}
	it.setT("cat", sub.CreatedAt)
	it.setS("ls_pk", subsAll)
	it.setS("ls_sk", sub.ID)
	it.setS("st_pk", subsOfToken(sub.TokenID))
	it.setS("st_sk", sub.ID)
	return it
}

func decodeSubscription(it item) core.Subscription {
	sub := core.Subscription{
		ID: it.s("id"), TokenID: it.s("tid"), TokenHash: it.s("tkh"), Identity: it.s("ident"), URL: it.s("url"),
		Thread: it.n("thr"), CreatedAt: it.t("cat"),
		Stats: core.DeliveryStats{Delivered: it.n("d_ok"), Failures: it.n("d_fail"), Dropped: it.n("d_drop"), Pending: max(0, it.n("d_pend")),
			LastSuccess: it.tp("d_lsa"), LastFailure: it.tp("d_lfa"), LastError: it.s("d_err")},
	}
	if evs := it.s("evs"); evs != "" {
		sub.Events = strings.Split(evs, ",")
	}
	return sub
}

// PutSubscription stores a new subscription and counts it against its
// token's bound in the same transaction: the counter item's condition
// keeps the bound under concurrent subscribes, where counting first and
// writing after would not.
func (s *Store) PutSubscription(ctx context.Context, sub core.Subscription, limit int) error {
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &s.table, Item: encodeSubscription(sub), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Update: &types.Update{
			TableName: &s.table, Key: s.key(subCountKey(sub.TokenID), subCountSK),
			UpdateExpression:          aws.String("ADD n :one"),
			ConditionExpression:       aws.String("attribute_not_exists(n) OR n < :limit"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":limit": num(int64(limit))},
		}},
	}})
	return classifyTransact(err, map[int]error{0: core.ErrExists, 1: core.ErrFull})
}

// Subscription reads one subscription, strongly consistent.
func (s *Store) Subscription(ctx context.Context, id string) (core.Subscription, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.subItemKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return core.Subscription{}, fail("GetItem subscription", err)
	}
	if len(out.Item) == 0 {
		return core.Subscription{}, core.ErrNotFound
	}
	return decodeSubscription(out.Item), nil
}

// Subscriptions lists a token's subscriptions (the state index) or all of
// them (the list index), every page, and reads the items.
func (s *Store) Subscriptions(ctx context.Context, tokenID string) ([]core.Subscription, error) {
	index, pkAttr, pk := IndexList, "ls_pk", subsAll
	if tokenID != "" {
		index, pkAttr, pk = IndexState, "st_pk", subsOfToken(tokenID)
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String(index),
		KeyConditionExpression:    aws.String(pkAttr + " = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
	})
	var keys []map[string]types.AttributeValue
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fail("Query subscriptions", err)
		}
		for _, it := range page.Items {
			keys = append(keys, s.key(item(it).s("pk"), subSK))
		}
	}
	items, err := s.fetch(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]core.Subscription, 0, len(items))
	for _, it := range items {
		out = append(out, decodeSubscription(it))
	}
	return out, nil
}

// DeleteSubscription deletes a subscription of a token, conditioned on
// its being that token's, and gives its slot back in the same transaction.
func (s *Store) DeleteSubscription(ctx context.Context, id, tokenID string) error {
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: &s.table, Key: s.subItemKey(id),
			ConditionExpression:       aws.String("tid = :tid"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":tid": str(tokenID)},
		}},
		{Update: &types.Update{
			TableName: &s.table, Key: s.key(subCountKey(tokenID), subCountSK),
			UpdateExpression:          aws.String("ADD n :minus"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-1)},
		}},
	}})
	return classifyTransact(err, map[int]error{0: core.ErrNotFound})
}

// RecordDelivery counts an outcome with one conditional UpdateItem.
func (s *Store) RecordDelivery(ctx context.Context, id string, o core.DeliveryOutcome) error {
	at := str(o.At.UTC().Format(time.RFC3339Nano))
	var set, add []string
	vals := map[string]types.AttributeValue{}
	switch {
	case o.Queued > 0:
		add = append(add, "d_pend :queued")
		vals[":queued"] = num(o.Queued)
	case o.Delivered:
		add = append(add, "d_ok :one", "d_pend :minus")
		set = append(set, "d_lsa = :at")
	case o.Dropped:
		add = append(add, "d_drop :one", "d_pend :minus")
	}
	if o.Error != "" {
		add = append(add, "d_fail :one")
		set = append(set, "d_lfa = :at", "d_err = :err")
		vals[":err"] = str(truncate(o.Error, 200))
	}
	if len(add) == 0 && len(set) == 0 {
		return nil
	}
	expr := ""
	if len(set) > 0 {
		expr += "SET " + strings.Join(set, ", ") + " "
		vals[":at"] = at
	}
	expr += "ADD " + strings.Join(add, ", ")
	if strings.Contains(expr, ":one") {
		vals[":one"] = num(1)
	}
	if strings.Contains(expr, ":minus") {
		vals[":minus"] = num(-1)
	}
	in := &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: s.subItemKey(id), UpdateExpression: aws.String(expr),
		ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeValues: vals,
	}
	_, err := s.db.UpdateItem(ctx, in)
	if _, gone := errors.AsType[*types.ConditionalCheckFailedException](err); gone {
		return nil // unsubscribed meanwhile
	}
	return fail("UpdateItem subscription", err)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
