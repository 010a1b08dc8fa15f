package dynamo

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// Changed is what one stream record of the table says, decoded: a thread
// item as it is and as it was, a new message, or a new event. Other items
// (tokens, counters, markers, claims) say nothing to the feeds.
type Changed struct {
	Thread, Old *core.Thread
	Message     *core.Message
	Event       *core.Event
}

// DecodeChange reads a stream record's images (old is nil for an insert).
func DecodeChange(newImage, oldImage map[string]types.AttributeValue) (Changed, bool) {
	it := item(newImage)
	if len(it) == 0 {
		return Changed{}, false // a removal
	}
	pk, sk := it.s("pk"), it.s("sk")
	if !strings.HasPrefix(pk, "th_") {
		return Changed{}, false
	}
	switch {
	case sk == threadSK:
		th := decodeThread(it)
		c := Changed{Thread: &th}
		if len(oldImage) > 0 {
			old := decodeThread(item(oldImage))
			c.Old = &old
		}
		return c, true
	case strings.HasPrefix(sk, "m#") && len(oldImage) == 0:
		m := decodeMessage(it)
		return Changed{Message: &m}, true
	case strings.HasPrefix(sk, "e#") && len(oldImage) == 0:
		e := decodeEvent(it)
		return Changed{Event: &e}, true
	}
	return Changed{}, false
}
