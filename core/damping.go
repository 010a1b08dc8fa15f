package core

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
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
