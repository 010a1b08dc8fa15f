// Package lambda runs one Parley operation as an AWS Lambda function behind
// an API Gateway HTTP API (payload format 2.0). Every function is the same
// wiring — environment → DynamoDB client → core service → the HTTP or MCP
// handler for its operation → the API Gateway v2 adapter — so all of them go
// through the one rights check in core.
package lambda

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"
	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/edge"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/instance"
	"github.com/ainotes/parley/infra/mcpapi"
)

// MCP names the function that serves the MCP endpoint.
const MCP = "mcp"

// Handler is what lambda.Start runs: one API Gateway v2 event in, one response out.
type Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// New builds the handler for one operation of the table (or MCP). Logs
// are JSON lines on stdout, which Lambda sends to CloudWatch; nothing else
// is written there.
func New(ctx context.Context, operation string, cfg config.Lambda, logOut io.Writer) (Handler, error) {
	logger := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
	limits := core.ReferenceLimits()
	limits.PostsPerMinute = cfg.RateLimit
	inst, err := instance.Open(ctx, instance.Config{
		DynamoDB: cfg.DynamoDB, Table: cfg.Table,
		Service: core.Options{Realm: cfg.Realm, TokenCacheTTL: cfg.TokenCacheTTL, Profiles: cfg.Profiles, Limits: limits},
	})
	if err != nil {
		return nil, err
	}
	var h http.Handler
	if operation == MCP {
		h, err = mcpapi.New(inst.Service, logger, instance.Version)
	} else {
		var api *httpapi.API
		if api, err = httpapi.New(inst.Service, logger); err == nil {
			h, err = api.Operation(operation)
		}
	}
	if err != nil {
		return nil, err
	}
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		// API Gateway's request id ties our log line to its access log.
		return adapter.ProxyWithContext(edge.WithRequestID(ctx, ev.RequestContext.RequestID), ev)
	}, nil
}

// Main is the whole of a function's main: configure, build, start. It
// returns only on a configuration error; lambda.Start never returns.
func Main(operation string) error {
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	h, err := New(context.Background(), operation, cfg, os.Stdout)
	if err != nil {
		return err
	}
	awslambda.Start(h)
	return nil
}
