// Package refusal is the one table from core's refusal reasons to what the
// transports say: the HTTP status, and for MCP a tool result with isError
// (a refusal is never a JSON-RPC error). Storage trouble becomes
// unavailable, any other error internal; their text is never shown.
package refusal

import (
	"math"
	"net/http"
	"strconv"

	"github.com/ainotes/parley/core"
)

var status = map[core.Reason]int{
	core.ReasonInvalidBody:            http.StatusBadRequest,
	core.ReasonUnauthenticated:        http.StatusUnauthorized,
	core.ReasonTokenRightMissing:      http.StatusForbidden,
	core.ReasonThreadAuthorityMissing: http.StatusForbidden,
	core.ReasonThreadNotFound:         http.StatusNotFound,
	core.ReasonMessageNotFound:        http.StatusNotFound,
	core.ReasonClaimNotFound:          http.StatusNotFound,
	core.ReasonTokenNotFound:          http.StatusNotFound,
	core.ReasonNotFound:               http.StatusNotFound,
	core.ReasonMethodNotAllowed:       http.StatusMethodNotAllowed,
	core.ReasonTooLarge:               http.StatusRequestEntityTooLarge,
	core.ReasonInternal:               http.StatusInternalServerError,
	core.ReasonSelfReply:              http.StatusConflict,
	core.ReasonThreadClosed:           http.StatusConflict,
	core.ReasonInvalidTransition:      http.StatusConflict,
	core.ReasonSelfAttest:             http.StatusConflict,
	core.ReasonLimitExceeded:          http.StatusConflict,
	core.ReasonRateLimited:            http.StatusTooManyRequests,
	core.ReasonUnavailable:            http.StatusServiceUnavailable,
}

// Status is the HTTP status of a reason.
func Status(r core.Reason) int {
	if s, ok := status[r]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Body is the error object both transports carry:
// {"error":{"reason","message","detail"}} over HTTP, the same object as an MCP
// tool result's structured content.
type Body struct {
	Error *core.Refusal `json:"error"`
}

// Of maps any error to its refusal, HTTP status and Retry-After header value
// ("" when none applies).
func Of(err error) (*core.Refusal, int, string) {
	r := core.AsRefusal(err)
	if r.Detail == nil {
		r.Detail = map[string]any{}
	}
	retry := ""
	if r.RetryAfter > 0 {
		retry = strconv.Itoa(int(math.Ceil(r.RetryAfter.Seconds())))
	}
	return r, Status(r.Reason), retry
}
