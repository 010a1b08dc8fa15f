package testenv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
)

var motoTables atomic.Int64

// motoTable creates a table of Parley's schema, under a name no other test
// uses, on the shared moto server.
func motoTable(t *testing.T, opts ...func(*dynamodb.Options)) (*dynamodb.Client, string) {
	t.Helper()
	m := SharedMoto(t)
	t.Logf("moto %s at %s (started in %v)", m.Version, m.URL, m.Startup.Round(time.Millisecond))
	ctx := context.Background()
	client, err := config.DynamoDB(ctx, m.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("parley-%d-%d", time.Now().UnixNano(), motoTables.Add(1))
	if err := dynamo.CreateTable(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	return client, name
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }

func wantValidation(t *testing.T, what string, err error) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
		t.Fatalf("%s: got %v, want a ValidationException", what, err)
	}
	t.Logf("%s: %s", what, ae.ErrorMessage())
}

// TestMotoStrict: moto refuses what real DynamoDB refuses and the embedded
// server accepts.
func TestMotoStrict(t *testing.T) {
	client, table := motoTable(t)
	ctx := context.Background()

	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": s(""), "sk": s("t")},
	})
	wantValidation(t, "PutItem with an empty key string", err)

	_, err = client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		IndexName:                 aws.String(dynamo.IndexAwaiting),
		KeyConditionExpression:    aws.String("ib_pk = :p AND ib_sk > :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("aw#x"), ":e": s("")},
	})
	wantValidation(t, "Query with ib_sk > \"\"", err)

	// The same requests, well formed, pass.
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": s("th_1"), "sk": s("t"), "ib_pk": s("aw#x"), "ib_sk": s("1")},
	}); err != nil {
		t.Fatal(err)
	}
	out, err := client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		IndexName:                 aws.String(dynamo.IndexAwaiting),
		KeyConditionExpression:    aws.String("ib_pk = :p AND ib_sk > :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("aw#x"), ":e": s("0")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 1 {
		t.Fatalf("query found %d items, want 1", out.Count)
	}
}

// TestMotoRollback: a cancelled transaction leaves nothing, though moto
// applies its items in order and restores a snapshot of the table (taken
// once per table: motoserver.py's snapshot_tables_once).
func TestMotoRollback(t *testing.T) {
	client, table := motoTable(t)
	ctx := context.Background()
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": s("th_1"), "sk": s("t"), "ver": n(1)},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("th_1"), "sk": s("m#1")}}},
		{Put: &types.Put{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("th_1"), "sk": s("e#1")}}},
		{Put: &types.Put{
			TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": s("th_1"), "sk": s("t"), "ver": n(2)},
			ConditionExpression: aws.String("ver = :prev"), ExpressionAttributeValues: map[string]types.AttributeValue{":prev": n(7)},
		}},
	}})
	var canceled *types.TransactionCanceledException
	if !errors.As(err, &canceled) {
		t.Fatalf("got %v, want TransactionCanceled", err)
	}
	out, err := client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("th_1")},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 1 || out.Items[0]["ver"].(*types.AttributeValueMemberN).Value != "1" {
		t.Fatalf("after a cancelled transaction: %d items, %v", out.Count, out.Items)
	}
}

// count5xx counts the server's 5xx answers, retried or not.
type count5xx struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *count5xx) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(r)
	if err == nil && res.StatusCode >= 500 {
		c.n.Add(1)
	}
	return res, err
}

// TestMotoSerialized: 16 writers commit 20 version-conditioned transactions
// each, retrying on cancellation. Every reported commit bumps the version
// exactly once and writes exactly one message, and moto never answers 5xx.
// (Against moto without the lock, the same run has lost updates and 500s.)
func TestMotoSerialized(t *testing.T) {
	const writers, each = 16, 20
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = writers
	rt := &count5xx{next: tr}
	client, table := motoTable(t, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: rt} })
	ctx := context.Background()
	counter := map[string]types.AttributeValue{"pk": s("ctr"), "sk": s("c")}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"pk": s("ctr"), "sk": s("c"), "ver": n(0)},
	}); err != nil {
		t.Fatal(err)
	}

	var commits, cancels atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				for attempt := 0; ; attempt++ {
					if attempt == 500 {
						errs <- fmt.Errorf("writer %d, transaction %d: no commit in 500 attempts", w, i)
						return
					}
					got, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: counter, ConsistentRead: aws.Bool(true)})
					if err != nil {
						errs <- err
						return
					}
					prev, _ := strconv.Atoi(got.Item["ver"].(*types.AttributeValueMemberN).Value)
					_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
						{Put: &types.Put{
							TableName:                 aws.String(table),
							Item:                      map[string]types.AttributeValue{"pk": s("ctr"), "sk": s("c"), "ver": n(prev + 1)},
							ConditionExpression:       aws.String("ver = :prev"),
							ExpressionAttributeValues: map[string]types.AttributeValue{":prev": n(prev)},
						}},
						{Put: &types.Put{
							TableName:           aws.String(table),
							Item:                map[string]types.AttributeValue{"pk": s("msg"), "sk": s(fmt.Sprintf("m#%02d#%02d", w, i)), "ver": n(prev + 1)},
							ConditionExpression: aws.String("attribute_not_exists(pk)"),
						}},
					}})
					var canceled *types.TransactionCanceledException
					if errors.As(err, &canceled) {
						cancels.Add(1)
						time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					commits.Add(1)
					break
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	got, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: counter, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	ver, _ := strconv.Atoi(got.Item["ver"].(*types.AttributeValueMemberN).Value)
	messages := 0
	pages := dynamodb.NewQueryPaginator(client, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("msg")},
		Select:                    types.SelectCount,
		ConsistentRead:            aws.Bool(true),
	})
	for pages.HasMorePages() {
		p, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		messages += int(p.Count)
	}
	t.Logf("%d writers x %d transactions: %d commits, version %d, %d messages, %d cancellations, %d 5xx, in %v",
		writers, each, commits.Load(), ver, messages, cancels.Load(), rt.n.Load(), took.Round(time.Millisecond))
	if c := int(commits.Load()); c != writers*each || ver != c || messages != c {
		t.Errorf("commits %d, version %d, messages %d: want %d each", c, ver, messages, writers*each)
	}
	if k := rt.n.Load(); k != 0 {
		t.Errorf("moto answered 5xx %d times; its stderr ends:\n%s", k, SharedMoto(t).Stderr())
	}
}

// TestMotoClose: a server that is closed stops answering, and closing twice
// is harmless.
func TestMotoClose(t *testing.T) {
	m, err := StartMoto()
	if err != nil {
		t.Fatalf("moto_server not available: run `make test`, which installs it into .venv: %v", err)
	}
	res, err := http.Get(m.URL + "/moto-api/")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	m.Close()
	m.Close()
	if m.cmd.ProcessState == nil {
		t.Fatal("the server process was not reaped")
	}
	if _, err := http.Get(m.URL + "/moto-api/"); err == nil {
		t.Fatal("a closed server still answers")
	}
}
