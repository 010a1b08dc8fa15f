// Package lambda runs one Parley operation as an AWS Lambda function behind
// an API Gateway HTTP API (payload format 2.0). Every function is the same
// wiring — environment → DynamoDB client → core service → the HTTP or MCP
// handler for its operation → the API Gateway v2 adapter — so all of them go
// through the one rights check in core.
//
// Besides the operations of the table (core.AllOperations) there are two
// functions of the edge: MCP (the MCP endpoint, every method of /mcp) and
// Console (the moderation console at GET / and GET /ui/…, and API Gateway's
// $default route: Parley's own JSON 404 and 405 for every path no other
// route takes).
package lambda

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/textproto"
	"os"

	"github.com/aws/aws-lambda-go/events"
	awslambda "github.com/aws/aws-lambda-go/lambda"
	proxy "github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/console"
	"github.com/ainotes/parley/infra/edge"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/instance"
	"github.com/ainotes/parley/infra/mcpapi"
)

// MCP names the function that serves the MCP endpoint.
const MCP = "mcp"

// Console names the function that serves the moderation console and
// answers every route no other function has (API Gateway's $default).
const Console = "console"

// Handler is what lambda.Start runs: one API Gateway v2 event in, one response out.
type Handler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// New builds the handler for one operation of the table, MCP or Console.
// Logs are JSON lines on stdout, which Lambda sends to CloudWatch; nothing
// else is written there.
func New(ctx context.Context, operation string, cfg config.Lambda, logOut io.Writer) (Handler, error) {
	inst, logger, err := open(ctx, cfg, logOut)
	if err != nil {
		return nil, err
	}
	var h http.Handler
	switch operation {
	case MCP:
		h, err = mcpapi.New(inst.Service, logger, instance.Version)
	case Console:
		var api *httpapi.API
		if api, err = httpapi.New(inst.Service, logger); err == nil {
			mux := http.NewServeMux()
			console.Mount(mux)              // GET / and GET /ui/…
			mux.Handle("/", api.Fallback()) // everything else: JSON 404, or 405 with Allow
			h = mux
		}
	default:
		var api *httpapi.API
		if api, err = httpapi.New(inst.Service, logger); err == nil {
			h, err = api.Operation(operation)
		}
	}
	if err != nil {
		return nil, err
	}
	return Adapt(h), nil
}

// Adapt turns an http.Handler into a Lambda handler for API Gateway HTTP
// API events (payload 2.0), with the request's headers as the client sent
// them.
//
// The proxy library splits every header that is not on its short list of
// single-value headers at commas (Idempotency-Key: "retry-7, attempt 2"
// would arrive as two values, "retry-7" and "attempt 2"). API Gateway has
// already joined repeated headers with commas, so a split cannot tell one
// header with a comma from two headers; the handler would see something
// the client never sent. Here every header of the event is set back as the
// one value API Gateway delivered — what net/http gives the local server
// for a header sent once. (A header sent twice is two values locally and
// one comma-joined value here: API Gateway leaves no way to tell.)
func Adapt(h http.Handler) Handler {
	var accessor proxy.RequestAccessorV2
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		// API Gateway's request id ties our log line to its access log.
		ctx = edge.WithRequestID(ctx, ev.RequestContext.RequestID)
		r, err := accessor.EventToRequestWithContext(ctx, ev)
		if err != nil {
			return proxy.GatewayTimeoutV2(), proxy.NewLoggedError("could not convert the event to a request: %v", err)
		}
		WholeHeaders(r.Header, ev.Headers)
		w := proxy.NewProxyResponseWriterV2()
		h.ServeHTTP(w, r)
		res, err := w.GetProxyResponse()
		if err != nil {
			return proxy.GatewayTimeoutV2(), proxy.NewLoggedError("could not build the response: %v", err)
		}
		return res, nil
	}
}

// WholeHeaders sets every header of an API Gateway event on h as one value,
// exactly as delivered. Cookies are not headers in payload 2.0 (the event's
// Cookies field); the proxy library's Cookie header is left as it made it.
func WholeHeaders(h http.Header, delivered map[string]string) {
	for k, v := range delivered {
		h[textproto.CanonicalMIMEHeaderKey(k)] = []string{v}
	}
}

// open builds what every function has: its JSON logger and the instance
// the environment describes.
func open(ctx context.Context, cfg config.Lambda, logOut io.Writer) (*instance.Instance, *slog.Logger, error) {
	logger := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))
	limits := core.ReferenceLimits()
	limits.PostsPerMinute = cfg.RateLimit
	inst, err := instance.Open(ctx, instance.Config{
		DynamoDB: cfg.DynamoDB, Table: cfg.Table,
		Service: core.Options{Realm: cfg.Realm, TokenCacheTTL: cfg.TokenCacheTTL, Profiles: cfg.Profiles, Limits: limits,
			Push: core.PushPolicy{Key: cfg.PushKey}},
	})
	return inst, logger, err
}

// Main is the whole of a function's main: configure, build, start. It
// returns only on a configuration error; lambda.Start never returns.
// function is an operation of the table, MCP, Console, PushStream or
// PushDeliver.
func Main(function string) error {
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	var h any
	switch function {
	case PushStream, PushDeliver:
		h, err = NewPush(context.Background(), function, cfg, os.Stdout)
	default:
		h, err = New(context.Background(), function, cfg, os.Stdout)
	}
	if err != nil {
		return err
	}
	awslambda.Start(h)
	return nil
}
