package dynamo

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// The index names and their key attributes. docs/storage.md describes each
// item type and access pattern; template.yaml declares the same table.
const (
	IndexState    = "by_state"    // st_pk = "state#<state>" | "claim#<state>", st_sk = padded id
	IndexList     = "by_list"     // ls_pk = "threads" | "tokens" | "claims#th_<n>", ls_sk = padded id | token id
	IndexAwaiting = "by_awaiting" // ib_pk = "aw#<identity>" | "aw#any" | "aw#human" | "claims", ib_sk = order key | padded claim id
	IndexEvents   = "by_events"   // ev_pk = "events", ev_sk = order key
	IndexQueue    = "by_queue"    // qu_pk = "queue", qu_sk = order key (sparse: threads that need a moderator)
	TTLAttribute  = "exp"         // epoch seconds; idempotency records and rate counters expire
)

// TableInput is the table definition (PAY_PER_REQUEST, five GSIs, all
// keys-only but for the inbox's three filter attributes: index writes cost
// as much as table writes, reads a fifth).
func TableInput(name string) *dynamodb.CreateTableInput {
	attrs := []string{"pk", "sk", "st_pk", "st_sk", "ls_pk", "ls_sk", "ib_pk", "ib_sk", "ev_pk", "ev_sk", "qu_pk", "qu_sk"}
	defs := make([]types.AttributeDefinition, 0, len(attrs))
	for _, a := range attrs {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
	}
	gsi := func(name, pk, sk string, proj types.ProjectionType, include ...string) types.GlobalSecondaryIndex {
		keys := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
		if sk != "" {
			keys = append(keys, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
		}
		p := &types.Projection{ProjectionType: proj}
		if len(include) > 0 {
			p.NonKeyAttributes = include
		}
		return types.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: keys, Projection: p}
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: defs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			// Threads and claims change on every post: their indexes hold
			// keys only (plus what the inbox filters on), so a write that
			// moves no key costs the indexes nothing; listings fetch the
			// items with one BatchGetItem.
			gsi(IndexState, "st_pk", "st_sk", types.ProjectionTypeKeysOnly),
			gsi(IndexList, "ls_pk", "ls_sk", types.ProjectionTypeKeysOnly),
			gsi(IndexAwaiting, "ib_pk", "ib_sk", types.ProjectionTypeInclude, "aw", "aw_id", "aw_ext"),
			gsi(IndexEvents, "ev_pk", "ev_sk", types.ProjectionTypeKeysOnly),
			gsi(IndexQueue, "qu_pk", "qu_sk", types.ProjectionTypeKeysOnly),
		},
	}
}

// CreateTable creates the table if it does not exist. An existing table is
// not an error (the embedded server's ListTables and waiters do not work, so
// ResourceInUseException is how "exists" is learned).
func CreateTable(ctx context.Context, db *dynamodb.Client, name string) error {
	_, err := db.CreateTable(ctx, TableInput(name))
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	return err
}

// Provision creates the table for a self-hosted instance and, on real
// DynamoDB (aws), waits until it is active and switches TTL on for the
// expiry attribute (idempotency records and rate counters expire). The
// stack (template.yaml) does the same for a deployed one.
func Provision(ctx context.Context, db *dynamodb.Client, name string, real bool) error {
	if err := CreateTable(ctx, db, name); err != nil {
		return err
	}
	if !real {
		return nil
	}
	w := dynamodb.NewTableExistsWaiter(db)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &name}, 5*time.Minute); err != nil {
		return err
	}
	_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &name, TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true)}})
	if api, ok := errors.AsType[smithy.APIError](err); ok && strings.Contains(api.ErrorMessage(), "already enabled") {
		return nil // a second run
	}
	return err
}
