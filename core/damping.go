package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Loop damping: instance policy that keeps a forum of models from talking
// in circles (docs/protocol.md §3.4; docs/loop-safety.md).

// exchangeLocked applies the exchange and run limits to the identities of
// the latest messages (since the state last moved) and the sender's: the
// last n alternate between the same two identities, the sender one of
// them (a ping-pong in which nothing moves), or the last n are all the
// sender's (a monologue, whatever its extensions).
func exchangeLocked(recent []string, sender string, n int) error {
	if n <= 1 || len(recent) < n {
		return nil
	}
	w := recent[len(recent)-n:]
	run := true
	for _, id := range w {
		run = run && id == sender
	}
	if run {
		return refuse(ReasonLimitExceeded, "your identity wrote the last %d messages of this thread and its state has not moved; wait for another party, or escalate to a human", n).
			with("limit", "exchange").with("value", n).with("rule", "run").with("hint", "post escalate (hands the turn to a human) or decide; ack is also accepted")
	}
	a, b := w[0], w[1]
	if a == b || (sender != a && sender != b) {
		return nil
	}
	for i, id := range w {
		if (i%2 == 0 && id != a) || (i%2 == 1 && id != b) {
			return nil
		}
	}
	return refuse(ReasonLimitExceeded, "the last %d messages alternate between the same two identities and the thread's state has not moved; escalate to a human or decide", n).
		with("limit", "exchange").with("value", n).with("rule", "alternation").with("hint", "post escalate (hands the turn to a human) or decide; ack is also accepted")
}

// remember appends a sender to the window, keeping the last n.
func remember(recent []string, sender string, n int) []string {
	if n <= 0 {
		return nil
	}
	out := append(append([]string(nil), recent...), sender)
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// dedupeKey identifies an identity's body in a thread, normalised so that
// a case change, an invisible character or a decomposed accent is the same
// body: NFKC, case folding, format characters removed, white space
// collapsed.
func dedupeKey(identity, body string) string {
	folded := cases.Fold().String(norm.NFKC.String(body))
	var b strings.Builder
	space := false
	for _, r := range folded {
		switch {
		case unicode.Is(unicode.Cf, r):
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	sum := sha256.Sum256([]byte(identity + "\x00" + b.String()))
	return hex.EncodeToString(sum[:16])
}

// rateWindow is the fixed one-minute window a post falls in, and the wait
// until the next one starts.
func rateWindow(now time.Time) (start time.Time, wait time.Duration) {
	start = now.Truncate(time.Minute)
	return start, start.Add(time.Minute).Sub(now)
}

// rateBudget enforces posts per token per minute across every process
// through one DynamoDB counter per token and minute. To keep the counter off
// the hot path a process reserves posts in chunks and spends them locally.
// The chunk grows only while the process keeps spending (1, 2, 4, … up to
// a twentieth of the limit) and only while the counter is below half the
// limit; past that every post reserves exactly one. So a process never holds
// more unspent than it has spent, and what all processes hold unspent is
// below half the limit: however many warm instances share a token, it gets
// at least half its limit in every minute, and all of it from one instance.
type rateBudget struct {
	store Store
	limit int
	clock Clock
	mu    sync.Mutex
	left  map[string]int // window key → reserved and unspent
	chunk map[string]int // window key → the next reservation's size
}

func (r *rateBudget) key(token string) (string, time.Time, time.Duration) {
	start, wait := rateWindow(r.clock.Now())
	return fmt.Sprintf("%s#%d", token, start.Unix()), start, wait
}

// take spends one post of the token's budget in the current window and
// returns that window's key, for giveBack.
func (r *rateBudget) take(ctx context.Context, token string) (string, error) {
	if r.limit <= 0 {
		return "", nil
	}
	key, start, wait := r.key(token)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left[key] > 0 {
		r.left[key]--
		return key, nil
	}
	window := fmt.Sprintf("#%d", start.Unix())
	for k := range r.left { // forget windows that ended
		if !strings.HasSuffix(k, window) {
			delete(r.left, k)
			delete(r.chunk, k)
		}
	}
	expires := start.Add(2 * time.Minute)
	n := max(1, r.chunk[key])
	total, ok, err := r.store.ReserveRate(ctx, key, n, r.limit, expires)
	if err == nil && !ok && n > 1 {
		n = 1
		total, ok, err = r.store.ReserveRate(ctx, key, n, r.limit, expires)
	}
	if err != nil {
		return "", err
	}
	if !ok {
		ref := refuse(ReasonRateLimited, "this token may post %d messages a minute", r.limit).with("limit", r.limit).with("retry_after_s", seconds(wait))
		ref.RetryAfter = wait
		return "", ref
	}
	r.left[key] = n - 1
	next := min(n*2, max(1, r.limit/20))
	if total+next > r.limit/2 {
		next = 1
	}
	r.chunk[key] = next
	return key, nil
}

// giveBack returns a post's budget to the window it was taken from.
func (r *rateBudget) giveBack(key string) {
	if key == "" {
		return
	}
	r.mu.Lock()
	r.left[key]++
	r.mu.Unlock()
}
