package dynamo

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// Threads pages through the state index or the list index, newest first
// (highest id first), then reads the threads with one BatchGetItem.
func (s *Store) Threads(ctx context.Context, q core.ThreadQuery) ([]core.Thread, int64, error) {
	index, pkAttr, skAttr, pk := IndexList, "ls_pk", "ls_sk", threadsAll
	if q.State != "" {
		index, pkAttr, skAttr, pk = IndexState, "st_pk", "st_sk", "state#"+string(q.State)
	}
	in := &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String(index), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(q.Limit)),
		KeyConditionExpression:    aws.String(pkAttr + " = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
	}
	if q.After != 0 {
		in.KeyConditionExpression = aws.String(pkAttr + " = :pk AND " + skAttr + " < :after")
		in.ExpressionAttributeValues[":after"] = str(pad15(q.After))
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, 0, fail("Query threads", err)
	}
	keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
	for _, it := range out.Items {
		keys = append(keys, s.key(item(it).s("pk"), threadSK))
	}
	items, err := s.fetch(ctx, keys)
	if err != nil {
		return nil, 0, err
	}
	ths := make([]core.Thread, 0, len(items))
	for _, it := range items {
		th := decodeThread(it)
		// The index may still show a thread in a state it has left; the
		// item is the truth. (Its entry under the new state comes.)
		if q.State != "" && th.State != q.State {
			continue
		}
		ths = append(ths, th)
	}
	var next int64
	if len(out.LastEvaluatedKey) > 0 && len(out.Items) > 0 {
		next = threadOfPK(item(out.Items[len(out.Items)-1]).s("pk"))
	}
	return ths, next, nil
}

// Events pages through one thread's events (a strongly consistent table
// Query: they are chained by version, nothing can be skipped) or through
// the instance's feed (the events index, ordered by commit stamp).
func (s *Store) Events(ctx context.Context, q core.EventQuery) ([]core.Event, string, error) {
	if q.Thread != 0 {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.table, ConsistentRead: aws.Bool(true), Limit: aws.Int32(int32(q.Limit)),
			KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(threadPK(q.Thread)), ":lo": str(eventSK(q.AfterSeq + 1)), ":hi": str("e#9999999999"),
			},
		})
		if err != nil {
			return nil, "", fail("Query thread events", err)
		}
		evs := make([]core.Event, 0, len(out.Items))
		for _, it := range out.Items {
			evs = append(evs, decodeEvent(it))
		}
		return evs, "", nil
	}
	if q.After != "" && !orderKeyPattern.MatchString(q.After) {
		return nil, "", core.ErrPosition
	}
	entries, next, err := s.settledFilter(ctx, IndexEvents, "ev_pk", "ev_sk", []string{eventsAll}, q.After, q.Limit, nil)
	if err != nil {
		return nil, "", err
	}
	keys := make([]map[string]types.AttributeValue, 0, len(entries))
	for _, e := range entries {
		keys = append(keys, s.key(e.it.s("pk"), e.it.s("sk")))
	}
	items, err := s.fetch(ctx, keys)
	if err != nil {
		return nil, "", err
	}
	evs := make([]core.Event, 0, len(items))
	for _, it := range items {
		evs = append(evs, decodeEvent(it))
	}
	return evs, next, nil
}

// entry is one index entry of a feed: its order key and what the index holds.
type entry struct {
	key string
	it  item
}

// feedRounds bounds the index pages one feed call reads per partition, so
// a call's work does not depend on the data.
const feedRounds = 2

// settledFilter reads a feed: the entries after a position in order-key
// order, merged across partitions, at most limit of them. Only entries up
// to the smallest last key of a partition with more to read are safe to
// hand out (the merge never skips one). The position returned is where the
// next call goes on: the last entry handed out, but never past
// now − FeedSettle, so that an entry whose commit or index entry lands
// late is still read; entries after that bound may come again (readers drop
// repeats by id). It is returned even when no entry was. keep, when set,
// drops entries from what is handed out (the position still moves past
// them).
func (s *Store) settledFilter(ctx context.Context, index, pkAttr, skAttr string, parts []string, after string, limit int, keep func(item) bool) ([]entry, string, error) {
	bound := settledKey(s.clock.Now(), s.settle)
	pos := after
	var kept []entry
	for round := 0; round < feedRounds && len(kept) < limit; round++ {
		var merged []entry
		safe, more := "", false
		for _, pk := range parts {
			in := &dynamodb.QueryInput{
				TableName: &s.table, IndexName: aws.String(index), Limit: aws.Int32(int32(limit)),
				KeyConditionExpression:    aws.String(pkAttr + " = :pk"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
			}
			// An empty string is never a key value in a condition (DynamoDB
			// refuses it): the first page has no lower bound.
			if pos != "" {
				in.KeyConditionExpression = aws.String(pkAttr + " = :pk AND " + skAttr + " > :after")
				in.ExpressionAttributeValues[":after"] = str(pos)
			}
			out, err := s.db.Query(ctx, in)
			if err != nil {
				return nil, "", fail("Query "+index, err)
			}
			for _, it := range out.Items {
				merged = append(merged, entry{key: item(it).s(skAttr), it: it})
			}
			if len(out.LastEvaluatedKey) > 0 && len(out.Items) > 0 {
				last := item(out.Items[len(out.Items)-1]).s(skAttr)
				if !more || last < safe {
					safe = last
				}
				more = true
			}
		}
		slices.SortFunc(merged, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		rest := false
		for _, e := range merged {
			if (more && e.key > safe) || len(kept) == limit {
				rest = true
				break
			}
			pos = e.key
			if keep == nil || keep(e.it) {
				kept = append(kept, e)
			}
		}
		if !more && !rest {
			// Everything there is has been read: the position may move to
			// the settle bound even past the last entry.
			if pos < bound {
				pos = bound
			}
			break
		}
		if !more {
			break
		}
	}
	if pos > bound {
		pos = bound
	}
	if pos < after {
		pos = after
	}
	return kept, pos, nil
}

// Awaiting reads the inbox: the caller's identity partition, the open
// calls and, for humans, the calls for any human, merged by order key.
// Index entries are filtered on their projected awaiting; the threads kept
// are read and filtered again as they are now.
func (s *Store) Awaiting(ctx context.Context, q core.AwaitingQuery) ([]core.Thread, string, error) {
	if q.After != "" && !orderKeyPattern.MatchString(q.After) {
		return nil, "", core.ErrPosition
	}
	parts := []string{awaitPK(q.Identity), awaitAny}
	if q.Human {
		parts = append(parts, awaitHuman)
	}
	awaiting := func(it item) core.Thread {
		return core.Thread{Awaiting: core.Awaiting{Scope: core.AwaitScope(it.s("aw")), Party: core.Party{Identity: it.s("aw_id"), Extension: it.s("aw_ext")}}}
	}
	entries, next, err := s.settledFilter(ctx, IndexAwaiting, "ib_pk", "ib_sk", parts, q.After, q.Limit, func(it item) bool { return q.Keep(awaiting(it)) })
	if err != nil {
		return nil, "", err
	}
	ths, err := s.threadsOf(ctx, entries)
	if err != nil {
		return nil, "", err
	}
	kept := ths[:0]
	for _, t := range ths {
		if q.Keep(t) {
			kept = append(kept, t)
		}
	}
	return kept, next, nil
}

// Queue reads the review queue: threads that need a moderator, by when
// they came to need one.
func (s *Store) Queue(ctx context.Context, q core.QueueQuery) ([]core.Thread, string, error) {
	if q.After != "" && !orderKeyPattern.MatchString(q.After) {
		return nil, "", core.ErrPosition
	}
	in := &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String(IndexQueue), Limit: aws.Int32(int32(q.Limit)),
		KeyConditionExpression:    aws.String("qu_pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(queueAll)},
	}
	if q.After != "" {
		in.KeyConditionExpression = aws.String("qu_pk = :pk AND qu_sk > :after")
		in.ExpressionAttributeValues[":after"] = str(q.After)
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, "", fail("Query queue", err)
	}
	entries := make([]entry, 0, len(out.Items))
	for _, it := range out.Items {
		entries = append(entries, entry{key: item(it).s("qu_sk"), it: it})
	}
	ths, err := s.threadsOf(ctx, entries)
	if err != nil {
		return nil, "", err
	}
	kept := ths[:0]
	for _, t := range ths {
		if t.Why() != "" {
			kept = append(kept, t)
		}
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 && len(entries) > 0 {
		next = entries[len(entries)-1].key
	}
	return kept, next, nil
}

// threadsOf reads the thread items that index entries point to.
func (s *Store) threadsOf(ctx context.Context, entries []entry) ([]core.Thread, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(entries))
	for _, e := range entries {
		keys = append(keys, s.key(e.it.s("pk"), threadSK))
	}
	items, err := s.fetch(ctx, keys)
	if err != nil {
		return nil, err
	}
	ths := make([]core.Thread, 0, len(items))
	for _, it := range items {
		ths = append(ths, decodeThread(it))
	}
	return ths, nil
}

// threadOfPK parses "th_<n>".
func threadOfPK(pk string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(pk, "th_"), 10, 64)
	return n
}
