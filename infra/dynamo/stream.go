package dynamo

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// DecodeRecord reads one record of the table's DynamoDB stream, as Lambda
// hands it over: a thread item as it is and as it was, a new message, or
// a new event. Other items (tokens, counters, markers, claims) and
// removals say nothing to the feeds: false.
func DecodeRecord(rec events.DynamoDBEventRecord) (core.Change, bool) {
	it := item(streamImage(rec.Change.NewImage))
	if len(it) == 0 {
		return core.Change{}, false // a removal
	}
	pk, sk := it.s("pk"), it.s("sk")
	if !strings.HasPrefix(pk, "th_") {
		return core.Change{}, false
	}
	isNew := len(rec.Change.OldImage) == 0
	switch {
	case sk == threadSK:
		th := decodeThread(it)
		c := core.Change{Thread: &th}
		if !isNew {
			old := decodeThread(item(streamImage(rec.Change.OldImage)))
			c.Old = &old
		}
		return c, true
	case strings.HasPrefix(sk, "m#") && isNew:
		m := decodeMessage(it)
		return core.Change{Message: &m}, true
	case strings.HasPrefix(sk, "e#") && isNew:
		e := decodeEvent(it)
		return core.Change{Event: &e}, true
	}
	return core.Change{}, false
}

// streamImage converts a stream image (Lambda's event types) to the SDK's
// attribute values, which the item decoders read.
func streamImage(image map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	if len(image) == 0 {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(image))
	for k, v := range image {
		if av := streamValue(v); av != nil {
			out[k] = av
		}
	}
	return out
}

func streamValue(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeList:
		var l []types.AttributeValue
		for _, e := range v.List() {
			l = append(l, streamValue(e))
		}
		return &types.AttributeValueMemberL{Value: l}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: streamImage(v.Map())}
	}
	return nil
}
