// Package edge holds what both transports do at their edge, once: the
// request id, the bearer token, the one log line per request, and a
// refusal written as HTTP (status, headers, the JSON error object).
package edge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/refusal"
)

// RequestIDHeader carries a client's request id; one is made when absent.
const RequestIDHeader = "X-Request-Id"

type ridKey struct{}

// WithRequestID lets an outer adapter (the Lambda one) supply the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ridKey{}, id)
}

// RequestID returns the request's id: the one an outer adapter supplied, the
// client's X-Request-Id, or a new random one.
func RequestID(r *http.Request) string {
	if id, ok := r.Context().Value(ridKey{}).(string); ok && id != "" {
		return id
	}
	if id := r.Header.Get(RequestIDHeader); id != "" && len(id) <= 128 && !strings.ContainsAny(id, "\r\n\"\\") {
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

// Record is what a request's log line reports; the handler fills it in.
type Record struct {
	Transport string
	RequestID string
	Op        string
	Identity  string
	Outcome   string // "ok" or a refusal reason
	Status    int
	start     time.Time
}

// Begin starts a request's record.
func Begin(transport, rid string) *Record {
	return &Record{Transport: transport, RequestID: rid, Outcome: "ok", Status: http.StatusOK, start: time.Now()}
}

// Log writes the one structured line every request gets, on either
// transport. Secrets are never in it.
func (rec *Record) Log(ctx context.Context, log *slog.Logger) {
	log.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("transport", rec.Transport),
		slog.String("request_id", rec.RequestID), slog.String("op", rec.Op), slog.String("identity", rec.Identity),
		slog.String("outcome", rec.Outcome), slog.Int("status", rec.Status),
		slog.Float64("latency_ms", float64(time.Since(rec.start).Microseconds())/1000))
}

// Refusal maps an error to the refusal a caller sees and notes it in the
// record. A cause (storage, a bug) is logged as an error, never shown; an
// internal refusal carries the request id so that a report can be matched.
func (rec *Record) Refusal(ctx context.Context, log *slog.Logger, err error) (*core.Refusal, int, string) {
	ref, status, retry := refusal.Of(err)
	rec.Outcome, rec.Status = string(ref.Reason), status
	if cause := errors.Unwrap(ref); cause != nil || ref.Reason == core.ReasonInternal || ref.Reason == core.ReasonUnavailable {
		level := slog.LevelWarn
		if ref.Reason == core.ReasonInternal {
			level = slog.LevelError
		}
		msg := ""
		if cause != nil {
			msg = cause.Error()
		}
		log.LogAttrs(ctx, level, "failure", slog.String("request_id", rec.RequestID), slog.String("op", rec.Op),
			slog.String("reason", string(ref.Reason)), slog.String("error", msg))
	}
	if ref.Reason == core.ReasonInternal {
		ref = &core.Refusal{Reason: ref.Reason, Message: ref.Message, Detail: map[string]any{"request_id": rec.RequestID}}
	}
	return ref, status, retry
}

// WriteRefusal writes a refusal as the HTTP error body with its status and
// headers.
func (rec *Record) WriteRefusal(ctx context.Context, log *slog.Logger, w http.ResponseWriter, err error) {
	ref, status, retry := rec.Refusal(ctx, log, err)
	if retry != "" {
		w.Header().Set("Retry-After", retry)
	}
	if ref.Reason == core.ReasonUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
	}
	WriteJSON(w, status, refusal.Body{Error: ref})
}

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
