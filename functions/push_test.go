package functions

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/lambda"
	"github.com/ainotes/parley/infra/push"
	"github.com/ainotes/parley/infra/testenv"
)

// pushKey is the push key of the emulated functions.
const pushKey = "emulated push key, 32 characters or more"

// TestPushFunctionsUnderEmulator runs the push profile's two functions —
// the real bootstraps, under the emulator, against moto's DynamoDB and SQS:
// the stream function with the DynamoDB Streams event in
// events/push_stream.json (alice opens a question to anyone) queues bob's
// turn; the delivery function, handed that queued message as SQS would,
// refuses to call bob's loopback receiver (a deployed instance calls public
// addresses only, checked again at delivery), counts the failure and
// queues the retry with its backoff. (The accepted path, with a receiver a
// local policy allows, runs in infra/push's TestAWSPathOnTheStrictBackend.)
func TestPushFunctionsUnderEmulator(t *testing.T) {
	rie := emulatorPath(t)
	m := testenv.SharedMoto(t)
	ctx := context.Background()
	table := "parley-push-emulated"
	client, err := config.DynamoDB(ctx, m.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	store, _ := dynamo.New(client, table, dynamo.Options{})
	// The operator's view of the table: a local policy, so that a loopback
	// receiver can be subscribed at all; the functions run a deployed one.
	svc, err := core.NewService(store, core.Options{Push: core.PushPolicy{Key: []byte(pushKey), Local: true}})
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := svc.CreateToken(ctx, core.TokenSpec{Identity: "ainotes:bob", Rights: []string{"read", "write"}})
	if err != nil {
		t.Fatal(err)
	}
	bob, _ := svc.Authenticate(ctx, secret)
	called := make(chan struct{}, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { called <- struct{}{} }))
	defer rcv.Close()
	sub, err := svc.Subscribe(ctx, bob, core.SubscribeInput{URL: rcv.URL + "/hook", Events: []string{core.PushTurn}})
	if err != nil {
		t.Fatal(err)
	}
	sqsc, err := config.SQS(ctx, m.URL)
	if err != nil {
		t.Fatal(err)
	}
	q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("parley-push-emulated")})
	if err != nil {
		t.Fatal(err)
	}

	bin := buildHost(t)
	env := []string{"PARLEY_TABLE=" + table, "PARLEY_DYNAMODB=" + m.URL, "AWS_REGION=us-east-1", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"PARLEY_PUSH_KEY=" + pushKey, "PARLEY_PUSH_QUEUE=" + aws.ToString(q.QueueUrl)}
	stream := startEmulator(t, rie, filepath.Join(bin, lambda.PushStream), env)
	deliver := startEmulator(t, rie, filepath.Join(bin, lambda.PushDeliver), env)

	sample, err := os.ReadFile("../events/push_stream.json")
	if err != nil {
		t.Fatal(err)
	}
	var streamRes events.DynamoDBEventResponse
	stream.call(t, sample, &streamRes)
	if len(streamRes.BatchItemFailures) != 0 {
		t.Fatalf("stream batch failures: %+v", streamRes)
	}
	receive := func() []events.SQSMessage { return testenv.Drain(t, sqsc, aws.ToString(q.QueueUrl)) }
	queued := receive()
	if len(queued) != 1 {
		t.Fatalf("%d deliveries queued, want bob's turn", len(queued))
	}
	var dl push.Delivery
	if err := json.Unmarshal([]byte(queued[0].Body), &dl); err != nil || dl.Event != core.PushTurn || dl.Subscription != sub.ID || !strings.Contains(string(dl.Body), `"id":"th_1"`) {
		t.Fatalf("queued %v %s", err, queued[0].Body)
	}

	event, _ := json.Marshal(events.SQSEvent{Records: queued})
	var sqsRes events.SQSEventResponse
	attempted := time.Now()
	deliver.call(t, event, &sqsRes)
	if len(sqsRes.BatchItemFailures) != 0 {
		t.Fatalf("delivery batch failures: %+v", sqsRes)
	}
	select {
	case <-called:
		t.Fatal("a deployed function called a loopback receiver")
	default:
	}
	retry := receive()
	var next push.Delivery
	if len(retry) != 1 || json.Unmarshal([]byte(retry[0].Body), &next) != nil || next.ID != dl.ID || next.Attempt != 1 || next.NotBefore.Before(attempted.Add(5*time.Second)) {
		// the first retry waits 10 s with jitter: 5 to 10 s
		t.Fatalf("the retry: %+v", retry)
	}
	page, _ := svc.ListSubscriptions(ctx, bob, core.NoInput{})
	st := page.Subscriptions[0].Stats
	if st.Failures != 1 || st.Delivered != 0 || st.LastFailure == nil || !strings.Contains(st.LastError, "no longer allowed") {
		t.Fatalf("stats %+v", st)
	}
	for _, e := range []*emulated{stream, deliver} {
		for _, line := range strings.Split(strings.TrimSpace(e.stdout.String()), "\n") {
			if strings.HasPrefix(line, "{") && !json.Valid([]byte(line)) || !strings.HasPrefix(line, "{") && !strings.Contains(line, "RequestId") && !strings.HasPrefix(line, "INIT") {
				t.Errorf("stray stdout line %q", line)
			}
		}
		if strings.Contains(e.stdout.String()+e.stderr.String(), pushKey) || strings.Contains(e.stdout.String(), "whsec_") {
			t.Error("a secret reached the log")
		}
	}
}
