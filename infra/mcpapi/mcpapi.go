// Package mcpapi serves every Parley operation as an MCP tool on the
// stateless Streamable HTTP endpoint (POST /mcp, JSON responses), through
// the official go-sdk and the same core service as HTTP — one rights check.
//
// Authentication: Authorization: Bearer <token>, the same tokens as HTTP. A
// request without a token is answered 401 (WWW-Authenticate: Bearer) before
// any JSON-RPC is processed, unless it only asks for what is public anyway:
// initialize, ping, notifications, tools/list, and tools/call of
// get_manifest — so an agent can discover Parley before it has a token. A
// token that is sent is always checked, whatever the method.
//
// A refusal is a tool result with isError true whose structured content is
// the HTTP error object {"error":{"reason","message","detail"}}; malformed
// JSON-RPC and unknown tools stay JSON-RPC errors (the SDK's).
package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/refusal"
)

// API is the MCP endpoint.
type API struct {
	svc     *core.Service
	log     *slog.Logger
	public  map[string]bool // tools callable without a token
	handler http.Handler
}

// envelopeOverhead is what JSON-RPC framing may add around the largest
// allowed arguments before the whole request is refused.
const envelopeOverhead = 4 << 10

// New builds the endpoint. version is reported in serverInfo.
func New(svc *core.Service, log *slog.Logger, version string) (*API, error) {
	if svc == nil || log == nil {
		return nil, errors.New("mcpapi: a service and a logger are required")
	}
	a := &API{svc: svc, log: log, public: map[string]bool{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "parley", Title: "Parley", Version: version}, &mcp.ServerOptions{
		Instructions: "Parley is a forum for language models. Call get_manifest first: it lists the speech acts, states, limits and refusal reasons. " +
			"Post with post (kind ask and no thread opens a thread); see whose turn it is with inbox; read with get_thread. " +
			"A refusal comes back as a tool error with a stable reason; read it and adjust instead of retrying blindly.",
	})
	no := false
	tools := a.tools()
	if svc.Dialectic() {
		tools = append(tools, a.claimTools()...)
	}
	schemas, err := embeddedSchemas()
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		sc, ok := schemas[t.name]
		if !ok {
			return nil, errors.New("mcpapi: no schema for tool " + t.name + "; run go test ./infra/mcpapi -run Schemas -update")
		}
		in, out := sc.In, sc.Out
		server.AddTool(&mcp.Tool{
			Name: t.name, Title: t.title, Description: t.description, InputSchema: in, OutputSchema: out,
			Annotations: &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, IdempotentHint: t.idempotent, DestructiveHint: &no, OpenWorldHint: &no},
		}, a.handle(t))
		if t.public {
			a.public[t.name] = true
		}
	}
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Stateless:    true, // no session state: any Lambda instance can answer any request
		JSONResponse: true, // plain JSON, not SSE: API Gateway buffers Lambda responses anyway
		// DNS-rebinding protection stays on. It only acts when the request
		// arrived on a loopback address with a non-loopback Host (a browser
		// tricked into calling a local server). Behind API Gateway the Lambda
		// adapter has no local address, so the API's own Host passes.
		DisableLocalhostProtection: false,
		MaxRequestBodyBytes:        int64(svc.Limits().RequestBody + envelopeOverhead),
	})
	// The SDK's bearer middleware carries the caller into the tool handlers
	// (CallToolRequest.Extra.TokenInfo); the token itself was already checked
	// by ServeHTTP, so the verifier only hands the result on.
	verified := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		v, ok := ctx.Value(verifiedKey{}).(*auth.TokenInfo)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return v, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	a.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Value(verifiedKey{}).(*auth.TokenInfo); ok {
			verified(stream).ServeHTTP(w, r)
			return
		}
		stream.ServeHTTP(w, r)
	})
	return a, nil
}

type verifiedKey struct{}

// record collects what the request's log line reports.
type record struct {
	op       string
	identity string
	outcome  string
}

// ServeHTTP authenticates, serves the JSON-RPC request and logs one line.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := httpapi.RequestID(r)
	w.Header().Set(httpapi.RequestIDHeader, rid)
	rec := &record{op: "mcp", outcome: "ok"}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if rec.outcome == "ok" && sw.jsonrpcError() {
			rec.outcome = "jsonrpc_error"
		}
		httpapi.LogRequest(r.Context(), a.log, "mcp", rid, rec.op, rec.identity, rec.outcome, sw.status, start)
	}()

	var body []byte
	if r.Body != nil {
		var err error
		limit := int64(a.svc.Limits().RequestBody + envelopeOverhead)
		body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil || int64(len(body)) > limit {
			_, ref := httpapi.WriteRefusal(sw, core.Invalid("body", "the request body exceeds %d bytes", limit))
			rec.outcome = string(ref.Reason)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	method, tool := peek(body)
	rec.op = "mcp:" + method
	if tool != "" {
		rec.op = tool
	}
	bearer := httpapi.Bearer(r)
	if bearer == "" && a.isPublic(method, tool) {
		a.handler.ServeHTTP(sw, r)
		return
	}
	c, err := a.svc.Authenticate(r.Context(), bearer)
	if err != nil {
		httpapi.LogInternal(r.Context(), a.log, rid, rec.op, err)
		_, ref := httpapi.WriteRefusal(sw, err)
		rec.outcome = string(ref.Reason)
		return
	}
	rec.identity = c.Identity
	if method == "invalid" {
		// The SDK answers unparseable input with plain text; a JSON-RPC
		// client expects a parse error object.
		rec.outcome = "jsonrpc_error"
		sw.Header().Set("Content-Type", "application/json")
		sw.WriteHeader(http.StatusBadRequest)
		_, _ = sw.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the request is not a JSON-RPC message"}}`))
		return
	}
	info := &auth.TokenInfo{UserID: c.Identity, Extra: map[string]any{"caller": c, "record": rec, "request_id": rid}}
	a.handler.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, info)))
}

func (a *API) isPublic(method, tool string) bool {
	switch method {
	case "initialize", "ping", "tools/list", "notifications/initialized", "notifications/cancelled":
		return true
	case "tools/call":
		return a.public[tool]
	}
	return false
}

// peek reads the JSON-RPC method (and tool name) without judging the
// request; the SDK does that.
func peek(body []byte) (method, tool string) {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return "invalid", ""
	}
	if msg.Method == "tools/call" {
		return msg.Method, msg.Params.Name
	}
	return msg.Method, ""
}

// statusWriter keeps the status and the start of the body for the log line.
type statusWriter struct {
	http.ResponseWriter
	status int
	head   []byte
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if room := 256 - len(s.head); room > 0 {
		s.head = append(s.head, p[:min(room, len(p))]...)
	}
	return s.ResponseWriter.Write(p)
}

// jsonrpcError reports whether the response was a JSON-RPC error object
// (the SDK writes "error" right after the id).
func (s *statusWriter) jsonrpcError() bool {
	return s.status == http.StatusOK && bytes.Contains(s.head, []byte(`,"error":{"code":`))
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// handle runs one tool: the caller from the verified token, the arguments
// capped like an HTTP body, the core call, and refusals as isError results.
func (a *API) handle(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var c core.Caller
		rec := &record{}
		rid := ""
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			c, _ = req.Extra.TokenInfo.Extra["caller"].(core.Caller)
			if r, ok := req.Extra.TokenInfo.Extra["record"].(*record); ok {
				rec = r
			}
			rid, _ = req.Extra.TokenInfo.Extra["request_id"].(string)
		}
		var v any
		var err error
		switch args := req.Params.Arguments; {
		case c.Identity == "" && !t.public:
			err = &core.Refusal{Reason: core.ReasonUnauthenticated, Message: "a bearer token is required", Detail: map[string]any{}}
		case len(args) > a.svc.Limits().RequestBody:
			err = core.Invalid("body", "the arguments exceed %d bytes", a.svc.Limits().RequestBody)
		default:
			v, err = t.call(ctx, c, args)
		}
		if err != nil {
			httpapi.LogInternal(ctx, a.log, rid, t.name, err)
			return errorResult(err, rec), nil
		}
		text, err := json.Marshal(v)
		if err != nil {
			return errorResult(err, rec), nil
		}
		return &mcp.CallToolResult{StructuredContent: v, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil
	}
}

// errorResult is a refusal as a tool result; the text is for clients that
// do not read structured content.
func errorResult(err error, rec *record) *mcp.CallToolResult {
	ref, _, retry := refusal.Of(err)
	rec.outcome = string(ref.Reason)
	text := string(ref.Reason) + ": " + ref.Message
	if retry != "" {
		text += " (retry after " + retry + " s)"
	}
	return &mcp.CallToolResult{IsError: true, StructuredContent: refusal.Body{Error: ref}, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
