package core

import (
	"errors"
	"fmt"
	"time"
)

// Reason is a stable, machine-readable refusal reason.
type Reason string

// The refusal reasons. Their wire status lives in infra, once.
const (
	ReasonInvalidBody            Reason = "invalid_body"
	ReasonUnauthenticated        Reason = "unauthenticated"
	ReasonTokenRightMissing      Reason = "token_right_missing"
	ReasonThreadAuthorityMissing Reason = "thread_authority_missing"
	ReasonThreadNotFound         Reason = "thread_not_found"
	ReasonMessageNotFound        Reason = "message_not_found"
	ReasonClaimNotFound          Reason = "claim_not_found"
	ReasonTokenNotFound          Reason = "token_not_found"
	ReasonNotFound               Reason = "not_found" // no such route or operation
	ReasonMethodNotAllowed       Reason = "method_not_allowed"
	ReasonSelfReply              Reason = "self_reply"
	ReasonThreadClosed           Reason = "thread_closed"
	ReasonInvalidTransition      Reason = "invalid_transition"
	ReasonSelfAttest             Reason = "self_attest"
	ReasonLimitExceeded          Reason = "limit_exceeded"
	ReasonTooLarge               Reason = "too_large"
	ReasonRateLimited            Reason = "rate_limited"
	ReasonInternal               Reason = "internal"
	ReasonUnavailable            Reason = "unavailable"
)

// Reasons lists every refusal reason in the order the manifest shows them.
var Reasons = []Reason{
	ReasonInvalidBody, ReasonUnauthenticated, ReasonTokenRightMissing,
	ReasonThreadAuthorityMissing, ReasonThreadNotFound, ReasonMessageNotFound,
	ReasonClaimNotFound, ReasonTokenNotFound, ReasonNotFound, ReasonMethodNotAllowed,
	ReasonSelfReply, ReasonThreadClosed, ReasonInvalidTransition, ReasonSelfAttest,
	ReasonLimitExceeded, ReasonTooLarge, ReasonRateLimited, ReasonInternal, ReasonUnavailable,
}

// Refusal is the one error type a caller is meant to see: a reason, a
// message for people, details for programs. Err, when set, is the cause
// (logged, never shown).
type Refusal struct {
	Reason  Reason         `json:"reason"`
	Message string         `json:"message"`
	Detail  map[string]any `json:"detail"`
	// RetryAfter is set for rate_limited and unavailable.
	RetryAfter time.Duration `json:"-"`
	Err        error         `json:"-"`
}

func (r *Refusal) Error() string {
	if r.Err != nil {
		return string(r.Reason) + ": " + r.Message + ": " + r.Err.Error()
	}
	return string(r.Reason) + ": " + r.Message
}

// Unwrap gives the cause.
func (r *Refusal) Unwrap() error { return r.Err }

func refuse(reason Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...), Detail: map[string]any{}}
}

// Refuse builds a refusal; adapters use it for the reasons only they can
// give (not_found, method_not_allowed, too_large).
func Refuse(reason Reason, format string, args ...any) *Refusal {
	return refuse(reason, format, args...)
}

// With adds one detail key and returns the refusal, for chaining.
func (r *Refusal) With(key string, value any) *Refusal {
	r.Detail[key] = value
	return r
}

func (r *Refusal) with(key string, value any) *Refusal { return r.With(key, value) }

// Invalid is invalid_body naming the field at fault.
func Invalid(field, format string, args ...any) *Refusal {
	return refuse(ReasonInvalidBody, format, args...).with("field", field)
}

// Unavailable is the refusal for storage failures and unresolved contention:
// nothing was written half-way (every change is one transaction), and the
// caller may retry after the hint. Whether a post whose answer was lost
// was stored cannot be known here; retried with the same idempotency key
// it is stored once.
func Unavailable(retryAfter time.Duration, cause error) *Refusal {
	r := refuse(ReasonUnavailable, "storage is unavailable or contended; retry later (a post retried with the same idempotency key is stored at most once)")
	r.RetryAfter, r.Err = retryAfter, cause
	return r.with("retry_after_s", seconds(retryAfter))
}

// Internal is a fault of the server itself; nothing the caller can fix.
func Internal(cause error) *Refusal {
	r := refuse(ReasonInternal, "the server failed; this is a bug, quote the request id when reporting it")
	r.Err = cause
	return r
}

func seconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// AsRefusal turns any error into the refusal a caller sees: refusals pass
// through; storage unavailability becomes unavailable; anything else is
// internal. The text of a cause is never shown.
func AsRefusal(err error) *Refusal {
	if r, ok := errors.AsType[*Refusal](err); ok {
		return r
	}
	if errors.Is(err, ErrUnavailable) {
		return Unavailable(time.Second, err)
	}
	return Internal(err)
}

// threadNotFound and claimNotFound are the refusals for a missing thread or
// claim, the same wherever one is looked up.
func threadNotFound(id int64) *Refusal {
	return refuse(ReasonThreadNotFound, "there is no thread %s", ThreadKey(id)).with("thread", ThreadKey(id))
}

func claimNotFound(id int64) *Refusal {
	return refuse(ReasonClaimNotFound, "there is no claim %s", ClaimKey(id)).with("claim", ClaimKey(id))
}
