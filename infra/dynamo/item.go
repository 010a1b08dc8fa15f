package dynamo

import (
	"fmt"
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

// Keys. No key value holds '.', and numbers are zero-padded so that string
// order is numeric order (both for the embedded server's sake and for cursors).
func pad12(n int64) string     { return fmt.Sprintf("%012d", n) }
func pad10(n int64) string     { return fmt.Sprintf("%010d", n) }
func threadPK(id int64) string { return fmt.Sprintf("th_%d", id) }
func messageSK(id int64) string {
	return "m#" + pad12(id)
}
func eventSK(seq int64) string { return "e#" + pad10(seq) }

// orderKey orders events and inbox entries across threads: time in
// milliseconds, then thread, then the thread's version.
func orderKey(t time.Time, thread, version int64) string {
	return fmt.Sprintf("%013d#%s#%s", t.UnixMilli(), pad12(thread), pad10(version))
}

const (
	threadSK   = "t"
	tokenSK    = "token"
	idemSK     = "idem"
	seqSK      = "seq"
	threadsAll = "threads"
	tokensAll  = "tokens"
	eventsAll  = "events"
	awaitBroad = "aw#*" // any and human calls share one partition of the inbox index
)
