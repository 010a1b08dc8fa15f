package push_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/push"
	"github.com/ainotes/parley/infra/testenv"
)

// TestAWSPathOnTheStrictBackend runs the AWS delivery path in-process
// against moto's DynamoDB stream and SQS queue: the stream records a post
// makes, read back from moto's stream, go through StreamHandler onto the
// queue; the queued deliveries, received from moto's SQS, go through
// QueueHandler to a real receiver: a receiver that fails once is tried
// again through the queue (with a delay) and then accepts; the
// subscription's stats say so.
func TestAWSPathOnTheStrictBackend(t *testing.T) {
	env := testenv.New(t, core.Options{Push: core.PushPolicy{Key: key, Local: true}})
	env.EnableStream(t)
	cast := env.Cast(t)
	ctx := context.Background()
	svc := env.Service
	auth := func(secret string) core.Caller {
		c, err := svc.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob := auth(cast.Alice), auth(cast.Bob)
	rcv := newReceiver(t, func(n int) int {
		if n == 1 {
			return 500
		}
		return 200
	})
	sub, err := svc.Subscribe(ctx, bob, core.SubscribeInput{URL: rcv.srv.URL + "/hook", Events: []string{core.PushTurn}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.PostJSON(ctx, alice, []byte(`{"kind":"ask","body":"bob, a review?"}`)); err != nil {
		t.Fatal(err)
	}

	client, err := config.SQS(ctx, env.URL)
	if err != nil {
		t.Fatal(err)
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(strings.ReplaceAll(env.Table, ".", "-") + "-push")})
	if err != nil {
		t.Fatalf("moto's SQS: %v", err)
	}
	queue := push.SQS{Client: client, URL: aws.ToString(q.QueueUrl)}
	d, err := push.NewDeliverer(svc, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	d.FirstBackoff = time.Second // SQS delays in whole seconds

	ev := env.StreamEvent(t)
	if len(ev.Records) == 0 {
		t.Fatal("the post left nothing on the stream")
	}
	res, err := push.StreamHandler(d, queue)(ctx, ev)
	if err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("the stream batch: %v %+v", err, res)
	}
	receive := func() []events.SQSMessage { return testenv.Drain(t, client, aws.ToString(q.QueueUrl)) }
	first := receive()
	if len(first) != 1 {
		t.Fatalf("%d deliveries queued, want bob's one turn", len(first))
	}
	var planned push.Delivery
	if err := json.Unmarshal([]byte(first[0].Body), &planned); err != nil || planned.Event != core.PushTurn || planned.Subscription != sub.ID {
		t.Fatalf("the queued delivery: %v %s", err, first[0].Body)
	}

	// First attempt: the receiver fails; the delivery goes back, delayed.
	if res, err := push.QueueHandler(d, queue)(ctx, events.SQSEvent{Records: first}); err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("the first attempt's batch: %v %+v", err, res)
	}
	again := receive()
	if len(again) != 1 {
		t.Fatalf("the failed delivery was not queued again: %d", len(again))
	}
	var retry push.Delivery
	_ = json.Unmarshal([]byte(again[0].Body), &retry)
	if retry.ID != planned.ID || retry.Attempt != 1 || retry.NotBefore.IsZero() {
		t.Fatalf("the retry %+v of %+v", retry, planned)
	}
	for time.Now().Before(retry.NotBefore) {
		time.Sleep(50 * time.Millisecond)
	}
	if res, err := push.QueueHandler(d, queue)(ctx, events.SQSEvent{Records: again}); err != nil || len(res.BatchItemFailures) != 0 {
		t.Fatalf("the second attempt's batch: %v %+v", err, res)
	}
	got := rcv.deliveries()
	if len(got) != 2 || got[0].id != got[1].id || got[1].status != 200 {
		t.Fatalf("the receiver saw %+v", got)
	}
	if err := core.VerifySignature(sub.Secret, got[1].signature, got[1].body, time.Now(), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	page, _ := svc.ListSubscriptions(ctx, bob, core.NoInput{})
	if s := page.Subscriptions[0].Stats; s.Delivered != 1 || s.Failures != 1 || s.Pending != 0 {
		t.Fatalf("stats %+v", s)
	}
	// PARLEY_WRITE_STREAM_EVENT=$PWD/events/push_stream.json rewrites the
	// sample the emulator test feeds the stream function: the thread's
	// records only, as the template's filter passes them.
	if path := os.Getenv("PARLEY_WRITE_STREAM_EVENT"); path != "" {
		var sample events.DynamoDBEvent
		for _, r := range ev.Records {
			if strings.HasPrefix(r.Change.Keys["pk"].String(), "th_") {
				sample.Records = append(sample.Records, r)
			}
		}
		raw, _ := json.MarshalIndent(sample, "", "  ")
		if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
