package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Loop damping: instance policy that keeps a forum of models from talking
// in circles (decisions §10; docs/loop-safety.md).

// dampingExempt are the acts that end or hand over a loop; they are always
// accepted by the exchange limit.
func dampingExempt(k Kind) bool { return k == KindAck || k == KindDecide || k == KindEscalate }

// exchangeLocked reports whether the last n senders alternate between the
// same two parties, s being one of them: the next message from either would
// continue a ping-pong in which the state has not moved.
func exchangeLocked(recent []Party, s Party, n int) bool {
	if n <= 1 || len(recent) < n {
		return false
	}
	w := recent[len(recent)-n:]
	a, b := w[0], w[1]
	if a == b || (s != a && s != b) {
		return false
	}
	for i, p := range w {
		if (i%2 == 0 && p != a) || (i%2 == 1 && p != b) {
			return false
		}
	}
	return true
}

// remember appends a sender to the window, keeping the last n.
func remember(recent []Party, s Party, n int) []Party {
	if n <= 0 {
		return nil
	}
	out := append(append([]Party(nil), recent...), s)
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// dedupeKey identifies an identity's body in a thread, whitespace-normalised.
func dedupeKey(identity, body string) string {
	sum := sha256.Sum256([]byte(identity + "\x00" + strings.Join(strings.Fields(body), " ")))
	return hex.EncodeToString(sum[:16])
}

// rateWindow is the fixed one-minute window a post falls in, and the wait
// until the next one starts.
func rateWindow(now time.Time) (start time.Time, wait time.Duration) {
	start = now.Truncate(time.Minute)
	return start, start.Add(time.Minute).Sub(now)
}

func exchangeRefusal(n int) *Refusal {
	return refuse(ReasonLimitExceeded, "the last %d messages alternate between the same two parties and the thread's state has not moved; escalate to a human or decide", n).
		with("limit", "exchange").with("value", n).with("hint", "post escalate (hands the turn to a human) or decide; ack is also accepted")
}

// rateBudget enforces posts per token per minute across every process
// through one DynamoDB counter per token and minute. To keep the counter off
// the hot path, a process reserves a few posts at a time (a twentieth of
// the limit) and spends them locally; a process can hold at most that many
// unused when the window ends, so the limit is never exceeded and is
// reached at worst a few posts early.
type rateBudget struct {
	store Store
	limit int
	clock Clock
	mu    sync.Mutex
	left  map[string]int // token id + window → reserved and unspent
}

func (r *rateBudget) key(token string) (string, time.Time, time.Duration) {
	start, wait := rateWindow(r.clock.Now())
	return fmt.Sprintf("%s#%d", token, start.Unix()), start, wait
}

func (r *rateBudget) take(ctx context.Context, token string) error {
	if r.limit <= 0 {
		return nil
	}
	key, start, wait := r.key(token)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left[key] > 0 {
		r.left[key]--
		return nil
	}
	window := fmt.Sprintf("#%d", start.Unix())
	for k := range r.left { // forget windows that ended
		if !strings.HasSuffix(k, window) {
			delete(r.left, k)
		}
	}
	expires := start.Add(2 * time.Minute)
	for _, n := range []int{max(1, r.limit/20), 1} {
		ok, err := r.store.ReserveRate(ctx, key, n, r.limit, expires)
		if err != nil {
			return err
		}
		if ok {
			r.left[key] = n - 1
			return nil
		}
	}
	ref := refuse(ReasonRateLimited, "this token may post %d messages a minute", r.limit).with("limit", r.limit)
	ref.RetryAfter = wait
	return ref
}

func (r *rateBudget) giveBack(token string) {
	if r.limit <= 0 {
		return
	}
	key, _, _ := r.key(token)
	r.mu.Lock()
	r.left[key]++
	r.mu.Unlock()
}
