package config_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"

	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/localdb"
	"github.com/ainotes/parley/infra/testenv"
)

// TestRetryPolicy: a failing DynamoDB is tried 4 times per request (the
// standard retryer with MaxAttempts 4), then the error surfaces.
func TestRetryPolicy(t *testing.T) {
	db, err := localdb.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	count := testenv.NewCounter()
	client, err := config.DynamoDB(ctx, db.URL, count.Option())
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTable(ctx, client, "t"); err != nil {
		t.Fatal(err)
	}
	count.Take()
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}, "sk": &types.AttributeValueMemberS{Value: "y"}}
	db.Server.EmulateFailure(server.FailureConditionInternalServerError)
	_, err = client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key})
	if err == nil {
		t.Fatal("a failing server answered")
	}
	if got := count.Take()["GetItem"]; got != 4 {
		t.Fatalf("%d attempts, want 4", got)
	}
	db.Server.EmulateFailure(server.FailureConditionNone)
	if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key}); err != nil {
		t.Fatal(err)
	}
	if got := count.Take()["GetItem"]; got != 1 {
		t.Fatalf("%d attempts for a healthy request", got)
	}
}
