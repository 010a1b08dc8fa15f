package core

import (
	"errors"
	"fmt"
	"time"
)

// Reason is a stable, machine-readable refusal reason (decisions §6).
type Reason string

// The refusal reasons of decisions §6. Their wire status lives in infra, once.
const (
	ReasonInvalidBody            Reason = "invalid_body"
	ReasonUnauthenticated        Reason = "unauthenticated"
	ReasonTokenRightMissing      Reason = "token_right_missing"
	ReasonThreadAuthorityMissing Reason = "thread_authority_missing"
	ReasonThreadNotFound         Reason = "thread_not_found"
	ReasonMessageNotFound        Reason = "message_not_found"
	ReasonClaimNotFound          Reason = "claim_not_found"
	ReasonSelfReply              Reason = "self_reply"
	ReasonThreadClosed           Reason = "thread_closed"
	ReasonInvalidTransition      Reason = "invalid_transition"
	ReasonSelfAttest             Reason = "self_attest"
	ReasonLimitExceeded          Reason = "limit_exceeded"
	ReasonRateLimited            Reason = "rate_limited"
	ReasonUnavailable            Reason = "unavailable"
)

// Reasons lists every refusal reason in the order the manifest shows them.
var Reasons = []Reason{
	ReasonInvalidBody, ReasonUnauthenticated, ReasonTokenRightMissing,
	ReasonThreadAuthorityMissing, ReasonThreadNotFound, ReasonMessageNotFound,
	ReasonClaimNotFound, ReasonSelfReply, ReasonThreadClosed,
	ReasonInvalidTransition, ReasonSelfAttest, ReasonLimitExceeded,
	ReasonRateLimited, ReasonUnavailable,
}

// Refusal is the one error type a caller is meant to see. Anything else that
// escapes the service is reported as unavailable without its text.
type Refusal struct {
	Reason  Reason         `json:"reason"`
	Message string         `json:"message"`
	Detail  map[string]any `json:"detail"`
	// RetryAfter is set for rate_limited and unavailable.
	RetryAfter time.Duration `json:"-"`
}

func (r *Refusal) Error() string { return string(r.Reason) + ": " + r.Message }

func refuse(reason Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...), Detail: map[string]any{}}
}

// with adds one detail key and returns the refusal, for chaining.
func (r *Refusal) with(key string, value any) *Refusal {
	r.Detail[key] = value
	return r
}

// Invalid is invalid_body naming the field at fault.
func Invalid(field, format string, args ...any) *Refusal {
	return refuse(ReasonInvalidBody, format, args...).with("field", field)
}

// Unavailable is the refusal for storage failures and unresolved contention:
// nothing was written and the caller may retry after the hint.
func Unavailable(retryAfter time.Duration) *Refusal {
	r := refuse(ReasonUnavailable, "storage is unavailable or contended; nothing was written, retry later")
	r.RetryAfter = retryAfter
	return r
}

// AsRefusal turns any error into the refusal a caller sees: refusals pass
// through, everything else becomes unavailable and keeps its text private.
func AsRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return Unavailable(time.Second)
}

// Store errors the service understands. Adapters wrap their own errors in these.
var (
	// ErrNotFound: the item does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost a race; re-read and retry.
	ErrConflict = errors.New("conflict")
	// ErrExists: an idempotency record with this key exists already.
	ErrExists = errors.New("exists")
	// ErrDuplicate: the commit's dedupe key exists already.
	ErrDuplicate = errors.New("duplicate")
)
