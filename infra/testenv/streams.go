package testenv

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The push profile on AWS reads the table's DynamoDB stream. The strict
// backend (moto) keeps one; these helpers switch it on and read it back as
// the event Lambda would hand the stream function.

// EnableStream switches the table's stream on (new and old images, as
// template.yaml does). Only changes after it are recorded.
func (e *Env) EnableStream(t testing.TB) {
	t.Helper()
	_, err := e.Client.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: &e.Table,
		StreamSpecification: &dtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: dtypes.StreamViewTypeNewAndOldImages}})
	if err != nil {
		t.Fatalf("enabling the stream: %v", err)
	}
}

// StreamEvent reads every record of the table's stream from its start and
// returns them as the DynamoDB event Lambda delivers (the JSON of
// events.DynamoDBEvent), each record's keys and images included.
func (e *Env) StreamEvent(t testing.TB) events.DynamoDBEvent {
	t.Helper()
	ctx := context.Background()
	desc, err := e.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &e.Table})
	if err != nil || desc.Table.LatestStreamArn == nil {
		t.Fatalf("the table has no stream: %v", err)
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	sc := dynamodbstreams.NewFromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")},
		func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(e.URL) })
	stream, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: desc.Table.LatestStreamArn})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	var ev events.DynamoDBEvent
	for _, shard := range stream.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: desc.Table.LatestStreamArn, ShardId: shard.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatalf("GetShardIterator: %v", err)
		}
		iter := it.ShardIterator
		for iter != nil {
			page, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatalf("GetRecords: %v", err)
			}
			for _, r := range page.Records {
				ev.Records = append(ev.Records, lambdaRecord(t, r, aws.ToString(desc.Table.LatestStreamArn)))
			}
			if len(page.Records) == 0 {
				break // the open shard's end, for now
			}
			iter = page.NextShardIterator
		}
	}
	return ev
}

// lambdaRecord is a stream record in Lambda's event shape, built through
// its JSON so the attribute values take events' own decoding.
func lambdaRecord(t testing.TB, r stypes.Record, arn string) events.DynamoDBEventRecord {
	t.Helper()
	d := r.Dynamodb
	rec := map[string]any{
		"eventID": aws.ToString(r.EventID), "eventName": string(r.EventName), "eventVersion": "1.1", "eventSource": "aws:dynamodb",
		"awsRegion": aws.ToString(r.AwsRegion), "eventSourceARN": arn,
		"dynamodb": map[string]any{
			"Keys": image(d.Keys), "NewImage": image(d.NewImage), "OldImage": image(d.OldImage),
			"ApproximateCreationDateTime": aws.ToTime(d.ApproximateCreationDateTime).Unix(),
			"SequenceNumber":              aws.ToString(d.SequenceNumber), "SizeBytes": aws.ToInt64(d.SizeBytes), "StreamViewType": string(d.StreamViewType),
		},
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out events.DynamoDBEventRecord
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("a stream record in Lambda's shape: %v\n%s", err, raw)
	}
	return out
}

// image is an item in DynamoDB's JSON ({"S": "…"}, {"N": "…"}, …).
func image(av map[string]stypes.AttributeValue) map[string]any {
	if av == nil {
		return nil
	}
	out := make(map[string]any, len(av))
	for k, v := range av {
		out[k] = value(v)
	}
	return out
}

func value(v stypes.AttributeValue) map[string]any {
	switch v := v.(type) {
	case *stypes.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *stypes.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *stypes.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *stypes.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *stypes.AttributeValueMemberB:
		return map[string]any{"B": v.Value}
	case *stypes.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *stypes.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *stypes.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}
	case *stypes.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = value(e)
		}
		return map[string]any{"L": l}
	case *stypes.AttributeValueMemberM:
		return map[string]any{"M": image(v.Value)}
	}
	return map[string]any{"NULL": true}
}

// Drain receives what an SQS queue holds (waiting up to 20 s for the
// first message, as a delayed one may be due soon), deletes it, and
// returns it as the records of the event Lambda would hand a function.
func Drain(t testing.TB, client *sqs.Client, queueURL string) []events.SQSMessage {
	t.Helper()
	ctx := context.Background()
	var out []events.SQSMessage
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && len(out) == 0; {
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		for _, m := range got.Messages {
			out = append(out, events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), ReceiptHandle: aws.ToString(m.ReceiptHandle),
				EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:parley-push", AWSRegion: "us-east-1"})
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("DeleteMessage: %v", err)
			}
		}
	}
	return out
}
