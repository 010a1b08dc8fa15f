// Package instance wires one Parley instance — DynamoDB client, store,
// service, transports — the same way for the local server, every Lambda
// function and the tests, so that they cannot drift apart.
package instance

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/console"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/mcpapi"
	"github.com/ainotes/parley/infra/push"
	"github.com/ainotes/parley/infra/refusal"
)

// Version is reported to MCP clients as serverInfo.version.
const Version = "0.2.0"

// Config is what an instance is made of.
type Config struct {
	DynamoDB string // an endpoint URL, or config.AWS
	Table    string
	// Create makes a missing table (local endpoints only; on AWS the stack
	// or `parley table create` does).
	Create bool
	// Service options: realm, limits, profiles, token cache, clock.
	Service core.Options
	// Store options: commit timeout, index lag.
	Store dynamo.Options
	// ClientOptions adjust the DynamoDB client (tests and benchmarks add
	// middleware with them).
	ClientOptions []func(*dynamodb.Options)
	// LocalPush runs the push profile's deliveries in this process, fed by
	// its commits (parley serve); on AWS the stream and queue functions do.
	LocalPush bool
	// Log receives the deliveries' log lines (LocalPush).
	Log *slog.Logger
}

// Instance is a wired instance.
type Instance struct {
	Client  *dynamodb.Client
	Store   *dynamo.Store
	Service *core.Service
	// Push delivers webhooks in this process (LocalPush); nil otherwise.
	Push *push.Runner
}

// Open connects to the table and builds the service.
func Open(ctx context.Context, cfg Config) (*Instance, error) {
	if cfg.Table == "" {
		return nil, errors.New("instance: a table name is required")
	}
	client, err := config.DynamoDB(ctx, cfg.DynamoDB, cfg.ClientOptions...)
	if err != nil {
		return nil, err
	}
	if cfg.Create && cfg.DynamoDB != config.AWS {
		if err := dynamo.CreateTable(ctx, client, cfg.Table); err != nil {
			return nil, err
		}
	}
	so := cfg.Store
	if so.Clock == nil {
		so.Clock = cfg.Service.Clock
	}
	st, err := dynamo.New(client, cfg.Table, so)
	if err != nil {
		return nil, err
	}
	o := cfg.Service
	o.HTTPStatus = refusal.Status
	var runner atomic.Pointer[push.Runner]
	if cfg.LocalPush {
		o.Committed = func(prev *core.Thread, c core.Commit) {
			if r := runner.Load(); r != nil {
				r.Observe(prev, c)
			}
		}
	}
	svc, err := core.NewService(st, o)
	if err != nil {
		return nil, err
	}
	inst := &Instance{Client: client, Store: st, Service: svc}
	if cfg.LocalPush && svc.PushOn() {
		d, err := push.NewDeliverer(svc, cfg.Log)
		if err != nil {
			return nil, err
		}
		inst.Push = push.NewRunner(d)
		runner.Store(inst.Push)
	}
	return inst, nil
}

// Handler serves everything on one mux, as `parley serve` does: the HTTP
// API at /v1 (and its 404/405 answers everywhere else), MCP at /mcp, and
// the moderation console at / and /ui/.
func (i *Instance) Handler(log *slog.Logger) (*http.ServeMux, error) {
	api, err := httpapi.New(i.Service, log)
	if err != nil {
		return nil, err
	}
	m, err := mcpapi.New(i.Service, log, Version)
	if err != nil {
		return nil, err
	}
	mux := api.Handler()
	mux.Handle("/mcp", m)
	console.Mount(mux)
	return mux, nil
}
