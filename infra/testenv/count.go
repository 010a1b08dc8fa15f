package testenv

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts the DynamoDB requests a client sends, by operation, once
// per attempt (it sits after the retry middleware): what benchmarks report
// as round trips and what tests use to see the retry policy at work.
type Counter struct {
	mu  sync.Mutex
	ops map[string]int
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{ops: map[string]int{}} }

// Option installs the counter on a client.
func (c *Counter) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("parley-count",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					c.mu.Lock()
					c.ops[awsmiddleware.GetOperationName(ctx)]++
					c.mu.Unlock()
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
}

// Take returns the counts so far and resets them.
func (c *Counter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.ops
	c.ops = map[string]int{}
	return out
}
