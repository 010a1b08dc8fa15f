package dynamo

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is one DynamoDB item under construction or being read.
type item map[string]types.AttributeValue

func (it item) setS(k, v string) {
	if v != "" { // empty strings are omitted: absent reads back as ""
		it[k] = &types.AttributeValueMemberS{Value: v}
	}
}

func (it item) setN(k string, v int64) {
	it[k] = &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func (it item) setT(k string, t time.Time) {
	if !t.IsZero() {
		it[k] = &types.AttributeValueMemberS{Value: t.UTC().Format(time.RFC3339Nano)}
	}
}

func (it item) setB(k string, v bool) { it[k] = &types.AttributeValueMemberBOOL{Value: v} }

func (it item) s(k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (it item) n(k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func (it item) t(k string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, it.s(k))
	return t
}

func (it item) tp(k string) *time.Time {
	if it.s(k) == "" {
		return nil
	}
	t := it.t(k)
	return &t
}

func (it item) b(k string) bool {
	v, ok := it[k].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// Keys. The store owns every key format; core sees ids and opaque
// positions. No key value holds '.', and numbers are zero-padded so that
// string order is numeric order (for the embedded server's sake too).
func pad15(n int64) string     { return fmt.Sprintf("%015d", n) }
func pad10(n int64) string     { return fmt.Sprintf("%010d", n) }
func pad4(n int) string        { return fmt.Sprintf("%04d", n) }
func threadPK(id int64) string { return "th_" + strconv.FormatInt(id, 10) }
func messageSK(ordinal int) string {
	return "m#" + pad4(ordinal)
}
func eventSK(seq int64) string { return "e#" + pad10(seq) }

// orderKey orders the feeds (instance events, inbox, review queue): the
// commit's stamp in milliseconds, then thread and version, which make it
// unique and stable. The stamp is taken by Commit just before the write.
func orderKey(t time.Time, thread, version int64) string {
	return fmt.Sprintf("%013d#%s#%s", t.UnixMilli(), pad15(thread), pad10(version))
}

// settledKey is the highest order key a feed reader may move past at now:
// everything stamped up to now − settle is visible.
func settledKey(now time.Time, settle time.Duration) string {
	return fmt.Sprintf("%013d#999999999999999#9999999999", now.Add(-settle).UnixMilli())
}

var orderKeyPattern = regexp.MustCompile(`^[0-9]{13}#[0-9]{15}#[0-9]{10}$`)

const (
	threadSK   = "t"
	tokenSK    = "token"
	idemSK     = "idem"
	seqSK      = "seq"
	threadsAll = "threads"
	tokensAll  = "tokens"
	eventsAll  = "events"
	queueAll   = "queue"
	claimsAll  = "claims"
	// The inbox index's partitions: one per identity for calls to one party,
	// one for open calls (any), one for calls to any human.
	awaitAny   = "aw#any"
	awaitHuman = "aw#human"
)

func awaitPK(identity string) string { return "aw#" + identity }
