package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/localdb"
	"github.com/ainotes/parley/infra/testenv"
)

func TestMeter(t *testing.T) {
	db, err := localdb.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	meter := testenv.NewMeter(dynamo.TableInput("m"))
	client, _ := config.DynamoDB(ctx, db.URL, meter.Option())
	if err := dynamo.CreateTable(ctx, client, "m"); err != nil {
		t.Fatal(err)
	}
	meter.Take()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	put := func(it map[string]types.AttributeValue) testenv.Usage {
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("m"), Item: it}); err != nil {
			t.Fatal(err)
		}
		return meter.Take()
	}
	big := string(make([]byte, 1500))
	cases := []struct {
		name string
		item map[string]types.AttributeValue
		wru  float64
	}{
		{"a small item, no index", map[string]types.AttributeValue{"pk": s("a"), "sk": s("b")}, 1},
		{"1.5 KB is two units", map[string]types.AttributeValue{"pk": s("a"), "sk": s("b"), "x": s(big)}, 2},
		{"entering a keys-only index", map[string]types.AttributeValue{"pk": s("c"), "sk": s("d"), "qu_pk": s("queue"), "qu_sk": s("1")}, 2},
		{"rewriting it unchanged costs the index nothing", map[string]types.AttributeValue{"pk": s("c"), "sk": s("d"), "qu_pk": s("queue"), "qu_sk": s("1"), "body": s("x")}, 1},
		{"entering an index with a big projected attribute", map[string]types.AttributeValue{"pk": s("e"), "sk": s("f"), "ib_pk": s("aw#x"), "ib_sk": s("1"), "aw": s(big)}, 4},
		{"moving its key: delete and put", map[string]types.AttributeValue{"pk": s("e"), "sk": s("f"), "ib_pk": s("aw#x"), "ib_sk": s("2"), "aw": s(big)}, 6},
		{"changing what it does not project costs it nothing", map[string]types.AttributeValue{"pk": s("e"), "sk": s("f"), "ib_pk": s("aw#x"), "ib_sk": s("2"), "aw": s(big), "body": s("y")}, 2},
		{"leaving it", map[string]types.AttributeValue{"pk": s("e"), "sk": s("f")}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := put(tc.item)
			if u.WRU != tc.wru || u.RoundTrips() != 1 || u.Calls["PutItem"] != 1 {
				t.Fatalf("WRU %v, calls %v; want %v", u.WRU, u.Calls, tc.wru)
			}
		})
	}
	t.Run("reads", func(t *testing.T) {
		if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("m"), Key: map[string]types.AttributeValue{"pk": s("a"), "sk": s("b")}, ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
		if u := meter.Take(); u.RRU != 1 {
			t.Fatalf("strong GetItem: %v RRU", u.RRU)
		}
		if _, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("m"), IndexName: aws.String(dynamo.IndexQueue),
			KeyConditionExpression: aws.String("qu_pk = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("queue")}}); err != nil {
			t.Fatal(err)
		}
		if u := meter.Take(); u.RRU != 0.5 {
			t.Fatalf("index Query: %v RRU", u.RRU)
		}
	})
	t.Run("a transaction doubles the table writes", func(t *testing.T) {
		st, _ := dynamo.New(client, "m", dynamo.Options{})
		now := time.Now()
		th := core.Thread{ID: 9, Version: 1, State: core.StateOpen, CreatedAt: now}
		if err := st.Commit(ctx, core.Commit{Thread: th}); err != nil {
			t.Fatal(err)
		}
		// thread item 2 WRU; it enters by_state and by_list (keys only): 2 more
		if u := meter.Take(); u.WRU != 4 || u.Calls["TransactWriteItems"] != 1 {
			t.Fatalf("%+v", u)
		}
		// A cancelled transaction is charged its items' units, no index writes.
		if err := st.Commit(ctx, core.Commit{Thread: th}); err == nil {
			t.Fatal("a second create went through")
		}
		if u := meter.Take(); u.WRU != 2 {
			t.Fatalf("cancelled: %+v", u)
		}
	})
	t.Run("a failed conditional write is charged", func(t *testing.T) {
		_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("m"), Item: map[string]types.AttributeValue{"pk": s("a"), "sk": s("b"), "x": s(big)},
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		if err == nil {
			t.Fatal("the condition held")
		}
		if u := meter.Take(); u.WRU != 2 {
			t.Fatalf("failed put: %+v", u)
		}
	})
}
