// Package testenv starts what the adapters' tests share: a DynamoDB-
// compatible server reached over loopback through the real SDK — the strict
// one (moto_server, DynamoDB's own validation) or the embedded one
// (minidyn, fast, with failure injection) — a table of the test's own, the
// one store, the service, and tokens. It is imported only by tests.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/instance"
	"github.com/ainotes/parley/infra/localdb"
)

// Backend is the DynamoDB-compatible server a test runs on.
type Backend string

const (
	// Strict is moto_server: it refuses what DynamoDB refuses, and is the
	// judge of every request shape. One serialized server per test binary.
	Strict Backend = "strict"
	// Embedded is minidyn in this process: lax (it accepts requests
	// DynamoDB rejects), fast, and able to inject failures. For the heavy
	// matrices and fault tests.
	Embedded Backend = "embedded"
)

// Env is one isolated Parley backend.
type Env struct {
	Backend Backend
	URL     string      // the DynamoDB endpoint
	Table   string      // this test's own table
	DB      *localdb.DB // the embedded server (Embedded only), for failure injection
	Client  *dynamodb.Client
	Store   *dynamo.Store
	Service *core.Service
	Log     *SyncBuffer // every log line the adapters wrote
	Logger  *slog.Logger
	inst    *instance.Instance
}

// Handler serves both transports on one mux, as `parley serve` does.
func (e *Env) Handler(t testing.TB) *http.ServeMux {
	t.Helper()
	mux, err := e.inst.Handler(e.Logger)
	if err != nil {
		t.Fatal(err)
	}
	return mux
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

// New starts a backend on the strict server; o may set limits or a clock.
// Unless o sets limits, the reference limits apply without the per-token
// rate limit, which tests that post quickly would trip; the rate limit has
// tests of its own.
//
// opts adjust the DynamoDB client (benchmarks install a meter with them).
func New(t testing.TB, o core.Options, opts ...func(*dynamodb.Options)) *Env {
	return On(t, Strict, o, opts...)
}

var tables atomic.Int64

// On starts a backend on the given server.
func On(t testing.TB, b Backend, o core.Options, opts ...func(*dynamodb.Options)) *Env {
	t.Helper()
	if o.Limits == (core.Limits{}) {
		o.Limits = core.ReferenceLimits()
		o.Limits.PostsPerMinute = 0
	}
	e := &Env{Backend: b, Table: fmt.Sprintf("parley-%d-%d", os.Getpid(), tables.Add(1))}
	switch b {
	case Strict:
		m := SharedMoto(t)
		e.URL = m.URL
		report(b, "moto_server "+m.Version)
	case Embedded:
		db, err := localdb.Start("")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		e.DB, e.URL = db, db.URL
		report(b, "minidyn")
	default:
		t.Fatalf("testenv: unknown backend %q", b)
	}
	// A slow, loaded machine (the strict backend serializes every request)
	// must not turn into refusals: commits get a generous deadline here;
	// the feed tests that depend on it read FeedSettle.
	inst, err := instance.Open(context.Background(), instance.Config{DynamoDB: e.URL, Table: e.Table, Create: true, Service: o, ClientOptions: opts,
		Store: dynamo.Options{CommitTimeout: 10 * time.Second, IndexLag: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	buf := &SyncBuffer{}
	e.Client, e.Store, e.Service, e.Log = inst.Client, inst.Store, inst.Service, buf
	e.inst = inst
	e.Logger = slog.New(slog.NewJSONHandler(buf, nil))
	return e
}

// report notes, once per test binary and backend, which backend this
// package's tests used: a line in the file PARLEY_BACKEND_REPORT names
// (make test prints them).
var reported sync.Map

func report(b Backend, what string) {
	if _, done := reported.LoadOrStore(b, true); done {
		return
	}
	path := os.Getenv("PARLEY_BACKEND_REPORT")
	if path == "" {
		return
	}
	pkg, _ := os.Getwd()
	if root, ok := repoRoot(); ok {
		if rel, err := filepath.Rel(root, pkg); err == nil {
			pkg = "./" + filepath.ToSlash(rel)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%-20s %-8s %s\n", strings.TrimSuffix(pkg, "/"), b, what)
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

// Advance moves the clock on, e.g. past a feed's settle window.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
