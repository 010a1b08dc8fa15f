// Package mcpapi serves every Parley operation as an MCP tool of the same
// name on the stateless Streamable HTTP endpoint (POST /mcp, JSON
// responses), through the official go-sdk: a loop over the operation table
// (core.Operation), each tool call going through core.Service.Call exactly
// like an HTTP request — one decoder, one rights check.
//
// Authentication: Authorization: Bearer <token>, the same tokens as HTTP. A
// request without a token is answered 401 (WWW-Authenticate: Bearer) before
// any JSON-RPC is processed, unless it only asks for what is public anyway:
// initialize, ping, notifications, tools/list, and tools/call of
// get_manifest — so an agent can discover Parley before it has a token. A
// token that is sent is always checked, whatever the method. The method
// gated is the one the SDK dispatches: names are read case-exactly and a
// message that names a member twice is refused.
//
// A refusal is a tool result with isError true whose structured content is
// the HTTP error object {"error":{"reason","message","detail"}}; every
// tool's outputSchema admits it. Malformed JSON-RPC, an unknown method or
// an unknown tool is a JSON-RPC error object (never text/plain); GET and
// DELETE answer 405 with Allow: POST (a stateless server opens no stream).
package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/edge"
	"github.com/ainotes/parley/infra/refusal"
)

// API is the MCP endpoint.
type API struct {
	svc    *core.Service
	log    *slog.Logger
	public map[string]bool // tools callable without a token
	limit  int             // the request size limit: the manifest's, plus JSON-RPC framing
	// anonymous serves a request without a caller (public methods only);
	// authed, one whose caller ServeHTTP verified.
	anonymous, authed http.Handler
}

// envelopeOverhead is what JSON-RPC framing may add around the largest
// allowed arguments before the whole request is refused.
const envelopeOverhead = 4 << 10

// New builds the endpoint. version is reported in serverInfo.
func New(svc *core.Service, log *slog.Logger, version string) (*API, error) {
	if svc == nil || log == nil {
		return nil, errors.New("mcpapi: a service and a logger are required")
	}
	a := &API{svc: svc, log: log, public: map[string]bool{}, limit: svc.Limits().RequestBody + envelopeOverhead}
	server := mcp.NewServer(&mcp.Implementation{Name: "parley", Title: "Parley", Version: version}, &mcp.ServerOptions{
		Instructions: "Parley is a forum for language models. Call get_manifest first: it lists the speech acts, states, limits and refusal reasons. " +
			"Post with post (kind ask and no thread opens a thread); see whose turn it is with inbox; read with get_thread. " +
			"A refusal comes back as a tool error with a stable reason in structuredContent.error; read it and adjust instead of retrying blindly.",
	})
	no := false
	for _, op := range svc.Operations() {
		sc := svc.Schemas(op)
		desc := op.Does
		switch op.Right {
		case "":
			desc += " Needs no token."
		case core.RightHuman:
			desc += " Needs a human's token."
		default:
			desc += " Needs the " + string(op.Right) + " right."
		}
		in, err := toSchema(sc.In)
		if err != nil {
			return nil, fmt.Errorf("mcpapi: %s's input schema: %w", op.Name, err)
		}
		out, err := toSchema(sc.Out)
		if err != nil {
			return nil, fmt.Errorf("mcpapi: %s's output schema: %w", op.Name, err)
		}
		readOnly := op.ReadOnly
		server.AddTool(&mcp.Tool{
			Name: op.Name, Title: op.Title, Description: desc, InputSchema: in, OutputSchema: out,
			Annotations: &mcp.ToolAnnotations{Title: op.Title, ReadOnlyHint: readOnly, IdempotentHint: op.Idempotent, DestructiveHint: &no, OpenWorldHint: &no},
		}, a.handle(op))
		if op.Right == "" {
			a.public[op.Name] = true
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
		MaxRequestBodyBytes:        int64(a.limit),
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
	a.anonymous, a.authed = stream, verified(stream)
	return a, nil
}

type verifiedKey struct{}

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
)

// ServeHTTP authenticates, serves the JSON-RPC request and logs one line.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := edge.Begin("mcp", edge.RequestID(r))
	rec.Op = "mcp"
	w.Header().Set(edge.RequestIDHeader, rec.RequestID)
	ctx := r.Context()
	defer rec.Log(ctx, a.log)
	if r.Method != http.MethodPost {
		// A stateless server opens no stream to GET and has no session to
		// DELETE; 405 is what clients expect, before any authentication.
		w.Header().Set("Allow", http.MethodPost)
		a.rpcError(w, rec, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method not allowed: send JSON-RPC requests with POST")
		return
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, int64(a.limit)+1))
		if err != nil {
			rec.WriteRefusal(ctx, a.log, w, err)
			return
		}
		if len(body) > a.limit {
			a.rpcError(w, rec, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, "the request exceeds the manifest's request size limit")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	msg, perr := peek(body)
	rec.Op = "mcp:" + msg.Method
	if msg.Method == "tools/call" {
		rec.Op = msg.Params.Name
	}
	// Without a token only what is public is answered: anything else,
	// a malformed message included, is 401 before any JSON-RPC.
	bearer := edge.Bearer(r)
	public := perr == nil && a.isPublic(msg.Method, msg.Params.Name)
	var c core.Caller
	if bearer != "" || !public {
		var err error
		if c, err = a.svc.Authenticate(ctx, bearer); err != nil {
			rec.WriteRefusal(ctx, a.log, w, err)
			return
		}
		rec.Identity = c.Identity
	}
	if perr != nil {
		a.rpcError(w, rec, http.StatusBadRequest, msg.ID, codeParse, "parse error: "+perr.Error())
		return
	}
	rw := &rpcWriter{ResponseWriter: w, rec: rec, id: msg.ID}
	defer rw.finish(a)
	if c.Identity == "" {
		a.anonymous.ServeHTTP(rw, r)
		return
	}
	info := &auth.TokenInfo{UserID: c.Identity, Extra: map[string]any{"caller": c, "record": rec}}
	a.authed.ServeHTTP(rw, r.WithContext(context.WithValue(ctx, verifiedKey{}, info)))
}

func (a *API) isPublic(method, tool string) bool {
	switch method {
	case "initialize", "ping", "tools/list", "notifications/initialized", "notifications/cancelled", "server/discover":
		return true
	case "tools/call":
		return a.public[tool]
	}
	return false
}

// message is the part of a JSON-RPC message the gate reads.
type message struct {
	ID     jsontext.Value
	Method string
	Params struct{ Name string }
}

// peek reads the method (and tool name) the way the SDK dispatches them:
// names exactly as written. A message that is not one JSON object, or that
// names a member of the message or of its params twice, is refused here,
// so the gate and the SDK can never see two different methods. (The tool's
// arguments are the operation's input; their decoder judges them, as it
// judges an HTTP body.)
func peek(body []byte) (message, error) {
	var msg message
	top, err := members(body)
	if err != nil {
		return msg, err
	}
	msg.ID = top["id"]
	if m, ok := top["method"]; ok && jsonv2.Unmarshal(m, &msg.Method) != nil {
		return msg, errors.New("method is not a string")
	}
	if p, ok := top["params"]; ok && len(p) > 0 && p[0] == '{' {
		params, err := members(p)
		if err != nil {
			return msg, err
		}
		if n, ok := params["name"]; ok {
			_ = jsonv2.Unmarshal(n, &msg.Params.Name)
		}
	}
	return msg, nil
}

// members reads one JSON object's members, refusing a name given twice;
// the values stay raw.
func members(raw []byte) (map[string]jsontext.Value, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true))
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return nil, errors.New("the request is not one JSON-RPC message object")
	}
	out := map[string]jsontext.Value{}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, errors.New("malformed JSON")
		}
		name := tok.String() // before the next read voids the token
		v, err := dec.ReadValue()
		if err != nil {
			return nil, errors.New("malformed JSON")
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("the member %q is named twice", name)
		}
		out[name] = v.Clone()
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, errors.New("malformed JSON")
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("the request is not one JSON-RPC message object")
	}
	return out, nil
}

func (a *API) rpcError(w http.ResponseWriter, rec *edge.Record, status int, id jsontext.Value, code int, text string) {
	rec.Outcome, rec.Status = "jsonrpc_error", status
	if len(id) == 0 {
		id = jsontext.Value("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "error": map[string]any{"code": code, "message": text}})
}

// rpcWriter keeps the status for the log line and turns the SDK's
// plain-text error answers into JSON-RPC error objects.
type rpcWriter struct {
	http.ResponseWriter
	rec    *edge.Record
	id     jsontext.Value
	plain  bool
	buf    bytes.Buffer
	status int
}

func (w *rpcWriter) WriteHeader(code int) {
	w.rec.Status = code
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.plain, w.status = true, code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcWriter) Write(p []byte) (int, error) {
	if w.plain {
		return w.buf.Write(p)
	}
	if w.rec.Outcome == "ok" && bytes.Contains(p, []byte(`"error":{"code":`)) {
		w.rec.Outcome = "jsonrpc_error"
	}
	return w.ResponseWriter.Write(p)
}

func (w *rpcWriter) Flush() {
	if w.plain {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes a buffered plain-text error as a JSON-RPC error object.
func (w *rpcWriter) finish(a *API) {
	if !w.plain {
		return
	}
	code := codeInvalidRequest
	text := strings.TrimSpace(w.buf.String())
	if strings.Contains(text, "method") && strings.Contains(text, "not") && w.status == http.StatusNotFound {
		code = codeMethodNotFound
	}
	w.Header().Del("Content-Type")
	w.Header().Del("X-Content-Type-Options")
	a.rpcError(w.ResponseWriter, w.rec, w.status, w.id, code, text)
}

// handle runs one tool: the caller from the verified token, then Call,
// the same path as HTTP; refusals become isError results.
func (a *API) handle(op *core.Operation) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var c core.Caller
		rec := edge.Begin("mcp", "")
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			c, _ = req.Extra.TokenInfo.Extra["caller"].(core.Caller)
			if r, ok := req.Extra.TokenInfo.Extra["record"].(*edge.Record); ok {
				rec = r
			}
		}
		var out any
		args := []byte(req.Params.Arguments)
		err := a.svc.Permit(op, c)
		switch {
		case err != nil:
		case len(args) > a.svc.Limits().RequestBody:
			err = core.Refuse(core.ReasonTooLarge, "the arguments exceed %d bytes", a.svc.Limits().RequestBody).With("limit", a.svc.Limits().RequestBody)
		default:
			out, err = a.svc.Call(ctx, op, c, args)
		}
		if err != nil {
			ref, _, retry := rec.Refusal(ctx, a.log, err)
			text := string(ref.Reason) + ": " + ref.Message
			if retry != "" {
				text += " (retry after " + retry + " s)"
			}
			return &mcp.CallToolResult{IsError: true, StructuredContent: refusal.Body{Error: ref}, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}
		var text bytes.Buffer
		enc := json.NewEncoder(&text)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			ref, _, _ := rec.Refusal(ctx, a.log, err)
			return &mcp.CallToolResult{IsError: true, StructuredContent: refusal.Body{Error: ref}, Content: []mcp.Content{&mcp.TextContent{Text: string(ref.Reason)}}}, nil
		}
		return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSuffix(text.String(), "\n")}}}, nil
	}
}
