// Package dynamo is Parley's one store: core.Store on DynamoDB, single-table.
// docs/storage.md lists every item type, index and request made here, and
// the DynamoDB rules each request was checked against.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ainotes/parley/core"
)

// Store implements core.Store.
type Store struct {
	db     *dynamodb.Client
	table  string
	clock  core.Clock
	commit time.Duration // deadline of one commit, retries included
	settle time.Duration // commit deadline plus index lag: what feed readers wait out
}

var _ core.Store = (*Store)(nil)

// Options tune a store; zero values take the defaults.
type Options struct {
	Clock core.Clock
	// CommitTimeout bounds one commit, the SDK's retries included, so that
	// a commit lands at most this long after its stamp. Default 2 s.
	CommitTimeout time.Duration
	// IndexLag is how long DynamoDB may take to show a committed item in a
	// global secondary index (typically well under a second). Default 3 s.
	IndexLag time.Duration
}

// New returns a store on an existing table.
func New(db *dynamodb.Client, table string, o Options) (*Store, error) {
	if db == nil || table == "" {
		return nil, errors.New("dynamo: a client and a table name are required")
	}
	if o.Clock == nil {
		o.Clock = core.SystemClock{}
	}
	if o.CommitTimeout <= 0 {
		o.CommitTimeout = 2 * time.Second
	}
	if o.IndexLag <= 0 {
		o.IndexLag = 3 * time.Second
	}
	return &Store{db: db, table: table, clock: o.Clock, commit: o.CommitTimeout, settle: o.CommitTimeout + o.IndexLag}, nil
}

// FeedSettle is the settle window of the feeds (core.Store).
func (s *Store) FeedSettle() time.Duration { return s.settle }

func (s *Store) key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}
}

// fail classifies a DynamoDB error for core: throttling, server faults,
// timeouts and broken connections are core.ErrUnavailable (retry later);
// everything else — above all a ValidationException — is a bug in the
// request and stays as it is, which core reports as internal.
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if transient(err) {
		return fmt.Errorf("dynamo %s: %w: %w", op, core.ErrUnavailable, err)
	}
	return fmt.Errorf("dynamo %s: %w", op, err)
}

func transient(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
			"InternalServerError", "ServiceUnavailable", "TransactionInProgressException", "LimitExceededException":
			return true
		}
	}
	var resp *smithyhttp.ResponseError
	if errors.As(err, &resp) && resp.HTTPStatusCode() >= 500 {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// --- tokens

// Token reads a token by hash (strongly consistent, so a revoke is seen at once).
func (s *Store) Token(ctx context.Context, hash string) (core.Token, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.key("tok#"+hash, tokenSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return core.Token{}, fail("GetItem token", err)
	}
	if len(out.Item) == 0 {
		return core.Token{}, core.ErrNotFound
	}
	return decodeToken(out.Item), nil
}

// PutToken stores a new token; one with the same hash is left alone and
// returned with ErrExists (the failed condition hands it back: no second
// read).
func (s *Store) PutToken(ctx context.Context, t core.Token) (core.Token, error) {
	it := item{"pk": str("tok#" + t.Hash), "sk": str(tokenSK)}
	it.setS("tid", t.ID)
	it.setS("hash", t.Hash)
	it.setS("ident", t.Identity)
	rights := make([]string, len(t.Rights))
	for i, r := range t.Rights {
		rights[i] = string(r)
	}
	it.setS("rights", strings.Join(rights, ","))
	it.setS("label", t.Label)
	it.setT("cat", t.CreatedAt)
	if t.RevokedAt != nil {
		it.setT("rev", *t.RevokedAt)
	}
	it.setS("ls_pk", tokensAll)
	it.setS("ls_sk", t.ID)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: it, ConditionExpression: aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if cce, exists := errors.AsType[*types.ConditionalCheckFailedException](err); exists {
		return decodeToken(cce.Item), core.ErrExists
	}
	if err != nil {
		return core.Token{}, fail("PutItem token", err)
	}
	return t, nil
}

func decodeToken(it item) core.Token {
	t := core.Token{ID: it.s("tid"), Hash: it.s("hash"), Identity: it.s("ident"), Label: it.s("label"), CreatedAt: it.t("cat"), RevokedAt: it.tp("rev")}
	for _, r := range strings.Split(it.s("rights"), ",") {
		if r != "" {
			t.Rights = append(t.Rights, core.Right(r))
		}
	}
	return t
}

// Tokens pages through the list index in id order (optionally the ids with
// a prefix), then reads the tokens with one BatchGetItem.
func (s *Store) Tokens(ctx context.Context, q core.TokenQuery) ([]core.Token, string, error) {
	cond, vals := "ls_pk = :p", map[string]types.AttributeValue{":p": str(tokensAll)}
	switch {
	case q.After != "":
		cond += " AND ls_sk > :after"
		vals[":after"] = str(q.After)
	case q.Prefix != "":
		cond += " AND begins_with(ls_sk, :prefix)"
		vals[":prefix"] = str(q.Prefix)
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String(IndexList), Limit: aws.Int32(int32(q.Limit)),
		KeyConditionExpression: aws.String(cond), ExpressionAttributeValues: vals,
	})
	if err != nil {
		return nil, "", fail("Query tokens", err)
	}
	keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
	for _, it := range out.Items {
		keys = append(keys, s.key(item(it).s("pk"), tokenSK))
	}
	items, err := s.fetch(ctx, keys)
	if err != nil {
		return nil, "", err
	}
	ts := make([]core.Token, 0, len(items))
	for _, it := range items {
		ts = append(ts, decodeToken(it))
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 && len(out.Items) > 0 {
		next = item(out.Items[len(out.Items)-1]).s("ls_sk")
	}
	return ts, next, nil
}

// RevokeToken marks a token revoked by its hash; the token must exist.
func (s *Store) RevokeToken(ctx context.Context, hash string, at time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: s.key("tok#"+hash, tokenSK),
		UpdateExpression:          aws.String("SET rev = :at"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(at.UTC().Format(time.RFC3339Nano))},
	})
	if _, missing := errors.AsType[*types.ConditionalCheckFailedException](err); missing {
		return core.ErrNotFound
	}
	return fail("UpdateItem token", err)
}

// --- ids

// NextID reserves the next number of a sequence with one atomic ADD.
func (s *Store) NextID(ctx context.Context, seq string) (int64, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: s.key("seq#"+seq, seqSK),
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fail("UpdateItem seq", err)
	}
	id := item(out.Attributes).n("n")
	if id < 1 {
		return 0, fmt.Errorf("dynamo: counter %s returned %d", seq, id)
	}
	return id, nil
}

// --- rate

// ReserveRate adds n to a rate counter with one conditional UpdateItem.
func (s *Store) ReserveRate(ctx context.Context, key string, n, limit int, expires time.Time) (int, bool, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: s.key("rate#"+key, "rate"),
		UpdateExpression:          aws.String("ADD n :n SET #exp = :exp"),
		ConditionExpression:       aws.String("attribute_not_exists(n) OR n <= :room"),
		ExpressionAttributeNames:  map[string]string{"#exp": TTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(n)), ":room": num(int64(limit - n)), ":exp": num(expires.Unix())},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if _, full := errors.AsType[*types.ConditionalCheckFailedException](err); full {
		return limit, false, nil
	}
	if err != nil {
		return 0, false, fail("UpdateItem rate", err)
	}
	return int(item(out.Attributes).n("n")), true, nil
}
