// Package testenv starts what the adapters' tests share: an embedded
// DynamoDB-compatible server reached over loopback, the table, the one
// store, the service, and tokens. It is imported only by tests.
package testenv

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/localdb"
)

// Env is one isolated Parley backend.
type Env struct {
	DB      *localdb.DB
	Client  *dynamodb.Client
	Store   *dynamo.Store
	Service *core.Service
	Log     *SyncBuffer // every log line the adapters wrote
	Logger  *slog.Logger
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// New starts a backend; o may set limits or a clock.
// Unless o sets limits, the reference limits apply without the per-token
// rate limit, which tests that post quickly would trip; the rate limit has
// tests of its own.
//
// opts adjust the DynamoDB client (benchmarks install a meter with them).
func New(t testing.TB, o core.Options, opts ...func(*dynamodb.Options)) *Env {
	t.Helper()
	if o.Limits == (core.Limits{}) {
		o.Limits = core.ReferenceLimits()
		o.Limits.PostsPerMinute = 0
	}
	db, err := localdb.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	client, err := config.DynamoDB(ctx, db.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTable(ctx, client, "parley"); err != nil {
		t.Fatal(err)
	}
	st, err := dynamo.New(client, "parley", o.Clock)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := core.NewService(st, o)
	if err != nil {
		t.Fatal(err)
	}
	buf := &SyncBuffer{}
	return &Env{DB: db, Client: client, Store: st, Service: svc, Log: buf, Logger: slog.New(slog.NewJSONHandler(io.MultiWriter(buf), nil))}
}

// Token creates a token and returns its secret.
func (e *Env) Token(t testing.TB, identity, label string, rights ...string) string {
	t.Helper()
	secret, _, err := e.Service.CreateToken(context.Background(), core.TokenSpec{Identity: identity, Rights: rights, Label: label})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// Cast is the usual set of parties in tests.
type Cast struct {
	Alice, Bob, Carol, Mod, Human, Reader, Verifier string
}

// Cast creates tokens for two writers and a third, a lock holder labelled
// "mod", a human, a read-only token and a verifier.
func (e *Env) Cast(t testing.TB) Cast {
	r := e.Service.Realm() + ":"
	return Cast{
		Alice:  e.Token(t, r+"alice", "", "read", "write"),
		Bob:    e.Token(t, r+"bob", "", "read", "write"),
		Carol:  e.Token(t, r+"carol", "", "read", "write"),
		Mod:    e.Token(t, r+"mod", "mod", "read", "write", "lock"),
		Human:  e.Token(t, "human:hana", ""),
		Reader: e.Token(t, r+"reader", "", "read"),
		// Verifier holds the dialectic seal but no lock.
		Verifier: e.Token(t, r+"vera", "", "read", "write", "verify"),
	}
}

// Clock is a settable clock for tests.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the current time and advances by a millisecond, so that
// successive writes get distinct, ordered times.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	return c.now
}
