package dynamo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
)

// batchGet reads items by key, 100 keys per BatchGetItem, each key once
// (DynamoDB refuses a request that names one twice). UnprocessedKeys are
// asked for again after an exponential, jittered backoff. The result maps
// pk+"\x00"+sk to the item; missing items are absent.
func (s *Store) batchGet(ctx context.Context, consistent bool, keys []map[string]types.AttributeValue) (map[string]item, error) {
	found := map[string]item{}
	var unique []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, k := range keys {
		if id := itemKey(k); !seen[id] {
			seen[id] = true
			unique = append(unique, k)
		}
	}
	for start := 0; start < len(unique); start += 100 {
		req := map[string]types.KeysAndAttributes{s.table: {Keys: unique[start:min(start+100, len(unique))], ConsistentRead: aws.Bool(consistent)}}
		backoff := 20 * time.Millisecond
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				if attempt > 6 {
					return nil, fmt.Errorf("dynamo: BatchGetItem left keys unprocessed: %w", core.ErrUnavailable)
				}
				t := time.NewTimer(time.Duration(rand.Int64N(int64(backoff))) + time.Millisecond)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil, fail("BatchGetItem", ctx.Err())
				case <-t.C:
				}
				backoff *= 2
			}
			out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fail("BatchGetItem", err)
			}
			for _, it := range out.Responses[s.table] {
				found[itemKey(it)] = it
			}
			req = out.UnprocessedKeys
		}
	}
	return found, nil
}

// fetch reads the items an index page pointed to, in the order of keys.
// It reads eventually consistent (half the price; the index is eventually
// consistent anyway) and asks again, strongly consistent, for any item
// that was not there yet — an index entry is never dropped because its item
// was not readable at first. Items that do not exist are left out.
func (s *Store) fetch(ctx context.Context, keys []map[string]types.AttributeValue) ([]item, error) {
	found, err := s.batchGet(ctx, false, keys)
	if err != nil {
		return nil, err
	}
	var missing []map[string]types.AttributeValue
	for _, k := range keys {
		if _, ok := found[itemKey(k)]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		again, err := s.batchGet(ctx, true, missing)
		if err != nil {
			return nil, err
		}
		for k, it := range again {
			found[k] = it
		}
	}
	out := make([]item, 0, len(keys))
	seen := map[string]bool{}
	for _, k := range keys {
		id := itemKey(k)
		if it, ok := found[id]; ok && !seen[id] {
			seen[id] = true
			out = append(out, it)
		}
	}
	return out, nil
}

func itemKey(it map[string]types.AttributeValue) string {
	return item(it).s("pk") + "\x00" + item(it).s("sk")
}
