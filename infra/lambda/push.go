package lambda

import (
	"context"
	"errors"
	"io"

	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/push"
)

// The push profile's two functions, off the request path: PushStream
// reads the table's DynamoDB stream and queues the deliveries the changes
// make; PushDeliver takes them off the SQS queue, one attempt each, and
// queues a failed one again with its backoff.
const (
	PushStream  = "push_stream"
	PushDeliver = "push_deliver"
)

// NewPush builds the handler of PushStream or PushDeliver: a
// func(context.Context, events.DynamoDBEvent) or
// func(context.Context, events.SQSEvent), as lambda.Start takes them.
func NewPush(ctx context.Context, function string, cfg config.Lambda, logOut io.Writer) (any, error) {
	if len(cfg.PushKey) == 0 || cfg.PushQueue == "" {
		return nil, errors.New("lambda: the push functions need PARLEY_PUSH_KEY and PARLEY_PUSH_QUEUE")
	}
	inst, logger, err := open(ctx, cfg, logOut)
	if err != nil {
		return nil, err
	}
	d, err := push.NewDeliverer(inst.Service, logger)
	if err != nil {
		return nil, err
	}
	client, err := config.SQS(ctx, cfg.DynamoDB)
	if err != nil {
		return nil, err
	}
	q := push.SQS{Client: client, URL: cfg.PushQueue}
	switch function {
	case PushStream:
		return push.StreamHandler(d, q), nil
	case PushDeliver:
		return push.QueueHandler(d, q), nil
	}
	return nil, errors.New("lambda: no push function " + function)
}
