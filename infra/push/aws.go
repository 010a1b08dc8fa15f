package push

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/dynamo"
)

// On AWS the table's DynamoDB stream feeds StreamHandler, which plans the
// deliveries and puts them on an SQS queue; QueueHandler takes them off,
// makes one attempt each, and puts a failed one back with a delay
// (SQS delays at most 15 minutes; a longer wait is a chain of them, the
// delivery carrying when it is due). The queue's dead-letter queue keeps
// what fails to be processed at all.

// Queue is where deliveries wait.
type Queue interface {
	Send(ctx context.Context, ds []Delivery) error
}

// SQS is a Queue on Amazon SQS.
type SQS struct {
	Client *sqs.Client
	URL    string
}

// maxDelay is SQS's longest message delay.
const maxDelay = 15 * time.Minute

// Send puts deliveries on the queue, each delayed until it is due (at
// most 15 minutes; the handler re-delays what is still early).
func (q SQS) Send(ctx context.Context, ds []Delivery) error {
	for start := 0; start < len(ds); start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i, d := range ds[start:min(start+10, len(ds))] {
			body, err := json.Marshal(d)
			if err != nil {
				return err
			}
			delay := int32(0)
			if wait := time.Until(d.NotBefore); wait > 0 {
				// rounded up: a message that arrives early costs another hop
				delay = int32(math.Ceil(min(wait, maxDelay).Seconds()))
			}
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body)), DelaySeconds: delay})
		}
		out, err := q.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &q.URL, Entries: entries})
		if err != nil {
			return err
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("push: SQS refused %d of %d deliveries: %s", len(out.Failed), len(entries), aws.ToString(out.Failed[0].Message))
		}
	}
	return nil
}

// StreamHandler handles a batch of the table's stream records: the
// changes become deliveries on the queue. A record that cannot be planned
// or queued is reported as failed, so that Lambda retries from it.
func StreamHandler(d *Deliverer, q Queue) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		var res events.DynamoDBEventResponse
		for _, rec := range ev.Records {
			ch, ok := dynamo.DecodeRecord(rec)
			if !ok {
				continue
			}
			planned, err := d.Plan(ctx, []core.Change{ch})
			if err == nil && len(planned) > 0 {
				err = q.Send(ctx, planned)
			}
			if err == nil {
				// Counted as pending once queued, so that a failed send
				// retried by Lambda is not counted twice.
				err = d.Queued(ctx, planned)
			}
			if err != nil {
				d.log.Error("push: a stream record failed", slog.String("sequence", rec.Change.SequenceNumber), slog.String("error", err.Error()))
				res.BatchItemFailures = append(res.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
				break // later records wait for this one
			}
		}
		return res, nil
	}
}

// QueueHandler handles a batch of queued deliveries: one attempt each,
// failed ones back on the queue with their backoff. A message whose
// attempt could not be made, or whose retry could not be queued, is
// reported as failed: SQS offers it again (and, after its
// maxReceiveCount, moves it to the dead-letter queue).
func QueueHandler(d *Deliverer, q Queue) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var res events.SQSEventResponse
		for _, msg := range ev.Records {
			var dl Delivery
			if err := json.Unmarshal([]byte(msg.Body), &dl); err != nil {
				d.log.Error("push: not a delivery", slog.String("message", msg.MessageId))
				continue // a poison message: dropping it is all one can do
			}
			next := &dl
			var err error
			if d.now().Before(dl.NotBefore) {
				// Still early (a wait longer than SQS's delay): back on the queue.
			} else {
				next, err = d.Attempt(ctx, dl)
			}
			if err == nil && next != nil {
				err = q.Send(ctx, []Delivery{*next})
			}
			if err != nil {
				d.log.Error("push: a delivery failed to be processed", slog.String("delivery", dl.ID), slog.String("error", err.Error()))
				res.BatchItemFailures = append(res.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
			}
		}
		return res, nil
	}
}
