// Package httpapi serves Parley's operations over HTTP (decisions §9). Every
// route authenticates, calls the one core service, and maps refusals through
// infra/refusal. One structured log line is written per request.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/refusal"
)

// API holds the routes. Handler serves them all; Operation serves one, for a
// Lambda function that owns a single route.
type API struct {
	svc *core.Service
	log *slog.Logger
	ops map[string]operation
}

// operation is one route: its name (decisions §9), pattern, whether it needs
// a token, and the call. serve returns the status and value to encode.
type operation struct {
	name    string
	pattern string
	auth    bool
	serve   func(r *http.Request, c core.Caller, body []byte) (int, any, error)
}

// New builds the API on a service. The logger receives one line per request.
func New(svc *core.Service, log *slog.Logger) (*API, error) {
	if svc == nil || log == nil {
		return nil, errors.New("httpapi: a service and a logger are required")
	}
	a := &API{svc: svc, log: log, ops: map[string]operation{}}
	for _, op := range a.operations() {
		a.ops[op.name] = op
	}
	if svc.Dialectic() {
		a.ops["get_claim"] = operation{"get_claim", "GET /v1/claims/{claim}", true, a.getClaim}
		a.ops["list_claims"] = operation{"list_claims", "GET /v1/claims", true, a.listClaims}
	}
	return a, nil
}

func (a *API) operations() []operation {
	return []operation{
		{"get_manifest", "GET /v1/manifest", false, a.manifest},
		{"whoami", "GET /v1/whoami", true, a.whoami},
		{"post", "POST /v1/messages", true, a.post},
		{"get_thread", "GET /v1/threads/{thread}", true, a.getThread},
		{"list_threads", "GET /v1/threads", true, a.listThreads},
		{"mark", "POST /v1/threads/{thread}/mark", true, a.mark},
		{"confirm", "POST /v1/threads/{thread}/confirm", true, a.confirm},
		{"reopen", "POST /v1/threads/{thread}/reopen", true, a.reopen},
		{"events", "GET /v1/events", true, a.events},
		{"inbox", "GET /v1/inbox", true, a.inbox},
	}
}

// Handler serves every route, plus the manifest's well-known alias.
func (a *API) Handler() *http.ServeMux {
	mux := http.NewServeMux()
	for _, op := range a.ops {
		mux.Handle(op.pattern, a.wrap(op))
	}
	mux.Handle("GET /.well-known/parley.json", a.wrap(a.ops["get_manifest"]))
	mux.HandleFunc("/", notFound)
	return mux
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"reason": "not_found", "message": "no such route; GET /v1/manifest lists the operations", "detail": map[string]any{},
	}})
}

// Operation serves one named operation regardless of path: the Lambda
// function for that route calls it. Path values are taken from the pattern.
func (a *API) Operation(name string) (http.Handler, error) {
	op, ok := a.ops[name]
	if !ok && (name == "get_claim" || name == "list_claims") {
		// The dialectic profile is off: its routes do not exist.
		return http.HandlerFunc(notFound), nil
	}
	if !ok {
		return nil, errors.New("httpapi: unknown operation " + name)
	}
	mux := http.NewServeMux()
	mux.Handle(op.pattern, a.wrap(op))
	if name == "get_manifest" {
		mux.Handle("GET /.well-known/parley.json", a.wrap(op))
	}
	return mux, nil
}

// RequestIDHeader carries a client's request id; one is made when absent.
const RequestIDHeader = "X-Request-Id"

type ctxKey struct{}

// WithRequestID lets an outer adapter (the Lambda one) supply the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID returns the request's id: the one an outer adapter supplied, the
// client's X-Request-Id, or a new random one.
func RequestID(r *http.Request) string {
	if id, ok := r.Context().Value(ctxKey{}).(string); ok && id != "" {
		return id
	}
	if id := r.Header.Get(RequestIDHeader); id != "" && len(id) <= 128 && !strings.ContainsAny(id, "\r\n\"") {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Bearer extracts the token from "Authorization: Bearer <token>".
func Bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

func (a *API) wrap(op operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := RequestID(r)
		w.Header().Set(RequestIDHeader, rid)
		identity := ""
		status, value, err := func() (int, any, error) {
			var c core.Caller
			// A token that is sent is always checked, even where none is needed.
			if op.auth || Bearer(r) != "" {
				var err error
				if c, err = a.svc.Authenticate(r.Context(), Bearer(r)); err != nil {
					return 0, nil, err
				}
				identity = c.Identity
			}
			body, err := readBody(r, a.svc.Limits().RequestBody)
			if err != nil {
				return 0, nil, err
			}
			return op.serve(r, c, body)
		}()
		outcome := "ok"
		if err != nil {
			LogInternal(r.Context(), a.log, rid, op.name, err)
			var ref *core.Refusal
			status, ref = WriteRefusal(w, err)
			outcome = string(ref.Reason)
		} else {
			writeJSON(w, status, value)
		}
		LogRequest(r.Context(), a.log, "http", rid, op.name, identity, outcome, status, start)
	})
}

// LogInternal logs the cause of an error that is not a refusal: the caller
// sees only unavailable, the operator sees why.
func LogInternal(ctx context.Context, log *slog.Logger, rid, op string, err error) {
	if _, isRefusal := errors.AsType[*core.Refusal](err); !isRefusal {
		log.LogAttrs(ctx, slog.LevelError, "internal error", slog.String("request_id", rid), slog.String("op", op), slog.String("error", err.Error()))
	}
}

// LogRequest writes the one structured line every request gets, on either transport.
func LogRequest(ctx context.Context, log *slog.Logger, transport, rid, op, identity, outcome string, status int, start time.Time) {
	log.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("transport", transport),
		slog.String("request_id", rid), slog.String("op", op), slog.String("identity", identity),
		slog.String("outcome", outcome), slog.Int("status", status),
		slog.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000))
}

// WriteRefusal writes a refusal as the HTTP error body with its status and
// headers, and returns the status.
func WriteRefusal(w http.ResponseWriter, err error) (int, *core.Refusal) {
	ref, status, retry := refusal.Of(err)
	if retry != "" {
		w.Header().Set("Retry-After", retry)
	}
	if ref.Reason == core.ReasonUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
	}
	writeJSON(w, status, refusal.Body{Error: ref})
	return status, ref
}

// readBody reads at most limit bytes; a larger body is refused before parsing.
func readBody(r *http.Request, limit int) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return nil, core.Unavailable(time.Second, err)
	}
	if len(body) > limit {
		return nil, &core.Refusal{Reason: core.ReasonInvalidBody, Message: "the request body exceeds " + strconv.Itoa(limit) + " bytes",
			Detail: map[string]any{"field": "body", "limit": limit}}
	}
	return body, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
