package refusal

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
)

// TestEveryReasonHasAStatus: the one table maps every reason core can give.
func TestEveryReasonHasAStatus(t *testing.T) {
	for _, r := range core.Reasons {
		if _, ok := status[r]; !ok {
			t.Errorf("reason %s has no HTTP status", r)
		}
	}
	if len(status) != len(core.Reasons) {
		t.Errorf("%d statuses for %d reasons", len(status), len(core.Reasons))
	}
}

// TestOf: refusals keep their reason, storage trouble is unavailable with a
// retry, anything else is internal — and its text is never the message.
func TestOf(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		reason core.Reason
		status int
		retry  string
	}{
		{"a refusal", core.Invalid("body", "bad"), core.ReasonInvalidBody, http.StatusBadRequest, ""},
		{"storage unavailable", errors.Join(core.ErrUnavailable, errors.New("throttled")), core.ReasonUnavailable, http.StatusServiceUnavailable, "1"},
		{"a rate limit", func() error {
			r := core.Refuse(core.ReasonRateLimited, "slow down")
			r.RetryAfter = 1500 * time.Millisecond
			return r
		}(), core.ReasonRateLimited, http.StatusTooManyRequests, "2"},
		{"a bug", errors.New("ValidationException: secret detail"), core.ReasonInternal, http.StatusInternalServerError, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref, st, retry := Of(tc.err)
			if ref.Reason != tc.reason || st != tc.status || retry != tc.retry {
				t.Fatalf("%s %d %q", ref.Reason, st, retry)
			}
			if tc.reason == core.ReasonInternal && (ref.Message == "" || errors.Unwrap(ref) == nil) {
				t.Fatalf("internal without a message or a cause: %+v", ref)
			}
			for _, v := range []string{ref.Message} {
				if v == "ValidationException: secret detail" {
					t.Fatal("the cause's text is shown")
				}
			}
		})
	}
}
