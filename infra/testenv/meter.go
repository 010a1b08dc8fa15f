package testenv

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Meter measures what requests would cost on real DynamoDB on-demand, which
// the embedded server does not report: for every successful call it sizes
// the items written or read by DynamoDB's rules and counts write and read
// request units — 1 WRU per KB written (2 inside a transaction), 1 RRU per
// 4 KB read strongly consistent (½ eventually, index reads always ½), and
// the index writes each table write causes. It remembers the last version
// of every item written through it, so an update of an indexed item is
// charged only for the indexes whose keys or projected attributes changed.
//
// Assumptions (docs/performance.md): UpdateItem is charged on the item's
// last known size plus 16 bytes and never touches an index key (true of
// every update Parley makes); a read of a missing item costs the minimum.
type Meter struct {
	mu      sync.Mutex
	indexes []indexSpec
	shadow  map[string]map[string]types.AttributeValue
	u       Usage
}

// Usage is what a stretch of requests cost.
type Usage struct {
	Calls   map[string]int // operations by name
	WRU     float64
	RRU     float64
	InStore time.Duration // wall time spent inside DynamoDB calls
}

// RoundTrips is the number of requests.
func (u Usage) RoundTrips() int {
	n := 0
	for _, c := range u.Calls {
		n += c
	}
	return n
}

type indexSpec struct {
	hash, rng string
	proj      types.ProjectionType
	include   []string
}

// NewMeter builds a meter for the table definition the store uses.
func NewMeter(table *dynamodb.CreateTableInput) *Meter {
	m := &Meter{shadow: map[string]map[string]types.AttributeValue{}, u: Usage{Calls: map[string]int{}}}
	for _, g := range table.GlobalSecondaryIndexes {
		spec := indexSpec{hash: *g.KeySchema[0].AttributeName, proj: g.Projection.ProjectionType, include: g.Projection.NonKeyAttributes}
		if len(g.KeySchema) > 1 {
			spec.rng = *g.KeySchema[1].AttributeName
		}
		m.indexes = append(m.indexes, spec)
	}
	return m
}

// Option installs the meter on a client.
func (m *Meter) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("parley-meter",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					start := time.Now()
					out, md, err := next.HandleInitialize(ctx, in)
					m.record(awsmiddleware.GetOperationName(ctx), in.Parameters, out.Result, err, time.Since(start))
					return out, md, err
				}), middleware.Before)
		})
	}
}

// Take returns the usage so far and starts counting afresh (the memory of
// items written is kept).
func (m *Meter) Take() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.u
	m.u = Usage{Calls: map[string]int{}}
	return u
}

func (m *Meter) record(op string, in, out any, err error, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.u.Calls[op]++
	m.u.InStore += d
	if err != nil {
		m.u.WRU += m.failed(in, err)
		return
	}
	switch in := in.(type) {
	case *dynamodb.PutItemInput:
		m.u.WRU += m.put(in.Item, 1)
	case *dynamodb.UpdateItemInput:
		m.u.WRU += m.update(in.Key, 1)
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				m.u.WRU += m.put(it.Put.Item, 2)
			case it.Update != nil:
				m.u.WRU += m.update(it.Update.Key, 2)
			case it.Delete != nil, it.ConditionCheck != nil:
				m.u.WRU += 2
			}
		}
	case *dynamodb.GetItemInput:
		item := out.(*dynamodb.GetItemOutput).Item
		m.u.RRU += reads(size(item), consistent(in.ConsistentRead))
	case *dynamodb.BatchGetItemInput:
		for table, ka := range in.RequestItems {
			got := out.(*dynamodb.BatchGetItemOutput).Responses[table]
			for _, it := range got {
				m.u.RRU += reads(size(it), consistent(ka.ConsistentRead))
			}
			m.u.RRU += float64(len(ka.Keys)-len(got)) * reads(0, consistent(ka.ConsistentRead))
		}
	case *dynamodb.QueryInput:
		total := 0
		for _, it := range out.(*dynamodb.QueryOutput).Items {
			total += size(it)
		}
		m.u.RRU += reads(total, in.IndexName == nil && consistent(in.ConsistentRead))
	}
}

// failed is what a write that did not happen still costs: DynamoDB charges
// a failed conditional write the units of the write it refused, and a
// cancelled transaction the units of its items (without index writes,
// which never happened). Other failures (throttling, validation) are free.
func (m *Meter) failed(in any, err error) float64 {
	_, condition := errors.AsType[*types.ConditionalCheckFailedException](err)
	_, cancelled := errors.AsType[*types.TransactionCanceledException](err)
	switch in := in.(type) {
	case *dynamodb.PutItemInput:
		if condition {
			return writes(size(in.Item))
		}
	case *dynamodb.UpdateItemInput:
		if condition {
			return m.updateSize(in.Key)
		}
	case *dynamodb.TransactWriteItemsInput:
		if !cancelled {
			return 0
		}
		total := 0.0
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				total += 2 * writes(size(it.Put.Item))
			case it.Update != nil:
				total += 2 * m.updateSize(it.Update.Key)
			default:
				total += 2
			}
		}
		return total
	}
	return 0
}

func (m *Meter) updateSize(key map[string]types.AttributeValue) float64 {
	old := m.shadow[shadowKey(key)]
	if old == nil {
		old = key
	}
	return writes(size(old) + 16)
}

func consistent(b *bool) bool { return b != nil && *b }

// reads is the RRU of reading size bytes in one request.
func reads(size int, strong bool) float64 {
	units := math.Max(1, math.Ceil(float64(size)/4096))
	if strong {
		return units
	}
	return units / 2
}

func writes(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

func shadowKey(it map[string]types.AttributeValue) string {
	return attrS(it, "pk") + "\x00" + attrS(it, "sk")
}

func (m *Meter) put(it map[string]types.AttributeValue, factor float64) float64 {
	k := shadowKey(it)
	old := m.shadow[k]
	m.shadow[k] = it
	return factor*writes(size(it)) + m.indexWrites(old, it)
}

func (m *Meter) update(key map[string]types.AttributeValue, factor float64) float64 {
	old := m.shadow[shadowKey(key)]
	if old == nil {
		old = key
	}
	return factor * writes(size(old)+16)
}

// indexWrites is what one table write costs in the indexes: a new entry,
// a removed one, a moved one (delete and put), or a rewritten projection.
func (m *Meter) indexWrites(old, new map[string]types.AttributeValue) float64 {
	total := 0.0
	for _, ix := range m.indexes {
		oldIn, newIn := ix.holds(old), ix.holds(new)
		switch {
		case oldIn && newIn:
			if !reflect.DeepEqual(old[ix.hash], new[ix.hash]) || (ix.rng != "" && !reflect.DeepEqual(old[ix.rng], new[ix.rng])) {
				total += writes(size(ix.project(old))) + writes(size(ix.project(new)))
			} else if !reflect.DeepEqual(ix.project(old), ix.project(new)) {
				total += writes(size(ix.project(new)))
			}
		case newIn:
			total += writes(size(ix.project(new)))
		case oldIn:
			total += writes(size(ix.project(old)))
		}
	}
	return total
}

func (ix indexSpec) holds(it map[string]types.AttributeValue) bool {
	if it == nil || it[ix.hash] == nil {
		return false
	}
	return ix.rng == "" || it[ix.rng] != nil
}

func (ix indexSpec) project(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	if ix.proj == types.ProjectionTypeAll {
		return it
	}
	keep := append([]string{"pk", "sk", ix.hash, ix.rng}, ix.include...)
	out := map[string]types.AttributeValue{}
	for _, k := range keep {
		if v, ok := it[k]; ok {
			out[k] = v
		}
	}
	return out
}

// size is an item's size by DynamoDB's rules: attribute names plus values.
func size(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		digits := strings.Trim(strings.NewReplacer("-", "", ".", "").Replace(v.Value), "0")
		return (len(digits)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	}
	return 0
}
