package testenv

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// Stats is what a consistency check counted.
type Stats struct {
	Threads, Messages, Events, Claims int
}

func attrS(it map[string]types.AttributeValue, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(it map[string]types.AttributeValue, k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// CheckConsistency reads the whole table — a Scan, which only tests do —
// and fails the test on anything half-written: a thread whose message count,
// version or state disagrees with its messages and event log, an event log
// that is not an unbroken chain, a message without its thread or parent, a
// claim whose history does not replay to its state, or (dedupe=true) a post
// without its duplicate marker.
func (e *Env) CheckConsistency(t testing.TB, dedupe bool) Stats {
	t.Helper()
	type thread struct {
		msgs, ver int64
		state     string
		messages  map[int64]map[string]types.AttributeValue
		events    []map[string]types.AttributeValue
		markers   int
		present   bool
	}
	threads := map[string]*thread{}
	get := func(pk string) *thread {
		if threads[pk] == nil {
			threads[pk] = &thread{messages: map[int64]map[string]types.AttributeValue{}}
		}
		return threads[pk]
	}
	claims := map[string]map[string]types.AttributeValue{}
	records := map[string][]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(e.Client, &dynamodb.ScanInput{TableName: aws.String(e.Table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk, sk := attrS(it, "pk"), attrS(it, "sk")
			switch {
			case strings.HasPrefix(pk, "th_") && sk == "t":
				th := get(pk)
				th.present, th.msgs, th.ver, th.state = true, attrN(it, "msgs"), attrN(it, "ver"), attrS(it, "st")
			case strings.HasPrefix(pk, "th_") && strings.HasPrefix(sk, "m#"):
				get(pk).messages[attrN(it, "id")] = it
			case strings.HasPrefix(pk, "th_") && strings.HasPrefix(sk, "e#"):
				get(pk).events = append(get(pk).events, it)
			case strings.HasPrefix(pk, "th_") && strings.HasPrefix(sk, "d#"):
				get(pk).markers++
			case strings.HasPrefix(pk, "cl_") && sk == "c":
				claims[pk] = it
			case strings.HasPrefix(pk, "cl_") && strings.HasPrefix(sk, "h#"):
				records[pk] = append(records[pk], it)
			}
		}
	}
	var st Stats
	for pk, th := range threads {
		st.Threads++
		st.Messages += len(th.messages)
		st.Events += len(th.events)
		if !th.present {
			t.Errorf("%s: %d messages and %d events without a thread item", pk, len(th.messages), len(th.events))
			continue
		}
		if int64(len(th.messages)) != th.msgs {
			t.Errorf("%s: counts %d messages, holds %d", pk, th.msgs, len(th.messages))
		}
		if dedupe && th.markers != len(th.messages) {
			t.Errorf("%s: %d duplicate markers for %d messages", pk, th.markers, len(th.messages))
		}
		for id, m := range th.messages {
			if par := attrN(m, "par"); par != 0 && th.messages[par] == nil {
				t.Errorf("%s: msg_%d's parent msg_%d is missing", pk, id, par)
			}
			// Ordinals are taken under the thread's version: 1..msgs, no gap.
			if tid, ord := core.MessageParts(id); "th_"+strconv.FormatInt(tid, 10) != pk || ord < 1 || int64(ord) > th.msgs {
				t.Errorf("%s: msg_%d is out of its thread's ordinals (1..%d)", pk, id, th.msgs)
			}
		}
		sort.Slice(th.events, func(i, j int) bool { return attrN(th.events[i], "seq") < attrN(th.events[j], "seq") })
		prev, prevSeq := "", int64(0)
		for _, ev := range th.events {
			if attrS(ev, "from") != prev || attrN(ev, "seq") <= prevSeq || attrN(ev, "seq") > th.ver {
				t.Errorf("%s: event %d breaks the chain (from %q after %q)", pk, attrN(ev, "seq"), attrS(ev, "from"), prev)
			}
			prev, prevSeq = attrS(ev, "to"), attrN(ev, "seq")
		}
		if prev != th.state {
			t.Errorf("%s: the event log ends in %q, the thread is %q", pk, prev, th.state)
		}
	}
	for pk, cl := range claims {
		st.Claims++
		recs := records[pk]
		sort.Slice(recs, func(i, j int) bool { return attrN(recs[i], "seq") < attrN(recs[j], "seq") })
		state := core.ClaimUnverified
		for _, r := range recs {
			next, err := core.ClaimStep(core.Kind(attrS(r, "kind")), state)
			if err != nil || attrS(r, "from") != string(state) || attrS(r, "to") != string(next) {
				t.Errorf("%s: record %d does not follow from %s", pk, attrN(r, "seq"), state)
			}
			state = next
		}
		if attrS(cl, "cst") != string(state) || attrN(cl, "ver") != int64(1+len(recs)) {
			t.Errorf("%s: state %s version %d, history says %s after %d records", pk, attrS(cl, "cst"), attrN(cl, "ver"), state, len(recs))
		}
		th := threads["th_"+strconv.FormatInt(attrN(cl, "th"), 10)]
		if th == nil || th.messages[attrN(cl, "msg")] == nil || attrS(th.messages[attrN(cl, "msg")], "cst") != string(state) {
			t.Errorf("%s: its assert message is missing or shows another state", pk)
		}
	}
	return st
}
