// Package push delivers the push profile's webhooks: it turns committed
// changes into deliveries for the subscriptions that want them (Plan),
// makes one signed attempt at a time (Sender) and decides when to try
// again (Next). The same core runs in two places: in `parley serve`, fed
// by the service's commits with an in-process queue (Runner), and on AWS,
// fed by the table's DynamoDB stream with an SQS queue (StreamHandler,
// QueueHandler). A slow or dead receiver never slows a post: delivery is
// always off the request path.
package push

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/ainotes/parley/core"
)

// FromCommit gives the changes of one commit.
func FromCommit(prev *core.Thread, c core.Commit) []core.Change {
	th := c.Thread
	out := []core.Change{{Thread: &th, Old: prev}}
	if c.Message != nil {
		out = append(out, core.Change{Message: c.Message})
	}
	if c.Event != nil {
		out = append(out, core.Change{Event: c.Event})
	}
	return out
}

// Delivery is one webhook call: which subscription, which event, the body
// and when it was planned (it is dropped 24 hours after).
type Delivery struct {
	ID           string          `json:"id"` // stable across attempts: receivers drop repeats
	Subscription string          `json:"subscription"`
	Event        string          `json:"event"`
	Body         json.RawMessage `json:"body"`
	Planned      time.Time       `json:"planned"`
	Attempt      int             `json:"attempt"`
	NotBefore    time.Time       `json:"not_before,omitzero"`
}

// Plan lists the deliveries a batch of changes makes for the given
// subscriptions. Bodies are the JSON the feeds give: a turn is the
// thread as the inbox shows it, a state change the event as the events
// feed shows it, a message the message as get_thread shows it.
func Plan(changes []core.Change, subs []core.Subscription, now time.Time) ([]Delivery, error) {
	var out []Delivery
	for _, ch := range changes {
		// A change is one event, one message or one thread: its event,
		// key and body are the same for every subscription.
		var (
			event, key string
			thread     int64
			view       any
		)
		switch {
		case ch.Event != nil:
			event, key, thread, view = core.PushState, fmt.Sprintf("%d:%d", ch.Event.Thread, ch.Event.Seq), ch.Event.Thread, core.ViewEvent(*ch.Event)
		case ch.Message != nil:
			event, key, thread, view = core.PushMessage, fmt.Sprint(ch.Message.ID), ch.Message.Thread, core.ViewMessage(*ch.Message, now)
		case ch.Thread != nil:
			event, key, thread, view = core.PushTurn, fmt.Sprintf("%d:%d", ch.Thread.ID, ch.Thread.AwaitingVersion), ch.Thread.ID, core.ViewSummary(*ch.Thread)
		default:
			continue
		}
		var body []byte
		for _, sub := range subs {
			if !sub.Wants(event, thread) || (event == core.PushTurn && !newTurnFor(ch, sub.Identity)) {
				continue
			}
			if body == nil {
				var err error
				if body, err = json.Marshal(view); err != nil {
					return nil, err
				}
			}
			sum := sha256.Sum256([]byte(sub.ID + "|" + event + "|" + key))
			out = append(out, Delivery{ID: "dlv_" + hex.EncodeToString(sum[:12]), Subscription: sub.ID, Event: event, Body: body, Planned: now})
		}
	}
	return out, nil
}

// newTurnFor reports whether a thread change gave an identity's inbox the
// thread: awaiting was set anew and names it (a party of that identity,
// an open call it did not open, a call for humans to a human).
func newTurnFor(ch core.Change, identity string) bool {
	th := ch.Thread
	if ch.Old != nil && ch.Old.AwaitingVersion == th.AwaitingVersion {
		return false
	}
	switch a := th.Awaiting; a.Scope {
	case core.AwaitParty:
		return a.Party.Identity == identity
	case core.AwaitAny:
		return a.Party.Identity != identity
	case core.AwaitHuman:
		return core.IsHuman(identity)
	}
	return false
}

// Retry policy: exponential backoff with jitter (half the step fixed, half
// random) from 10 s, at most an hour apart, for 24 hours after the delivery
// was planned; then dropped.
const (
	firstBackoff = 10 * time.Second
	maxBackoff   = time.Hour
	giveUpAfter  = 24 * time.Hour
)

// next says when to try a failed delivery again, or false to drop it.
func next(d Delivery, now time.Time, first time.Duration) (time.Time, bool) {
	backoff := first << min(d.Attempt, 20)
	backoff = min(backoff, maxBackoff)
	wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
	at := now.Add(wait)
	if at.Sub(d.Planned) > giveUpAfter {
		return time.Time{}, false
	}
	return at, true
}

// Sender makes delivery attempts: a POST with the signature headers, a
// timeout, no redirects followed, a cap on what is read of the answer,
// and — on a deployed instance — a refusal to connect to any address that
// is not public, checked on the address actually dialled (DNS rebinding).
type Sender struct {
	policy core.PushPolicy
	client *http.Client
	now    func() time.Time
}

// Limits of one attempt.
const (
	attemptTimeout = 10 * time.Second
	answerCap      = 64 << 10
)

// NewSender builds a sender for a policy.
func NewSender(policy core.PushPolicy) *Sender {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if !policy.Local {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, _ := net.SplitHostPort(address)
			a, err := netip.ParseAddr(host)
			if err != nil || !core.PublicAddr(a) {
				return fmt.Errorf("push: refusing to connect to %s, not a public address", host)
			}
			return nil
		}
	}
	transport := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: 5 * time.Second, ResponseHeaderTimeout: attemptTimeout, MaxIdleConnsPerHost: 2}
	client := &http.Client{Transport: transport, Timeout: attemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Sender{policy: policy, client: client, now: time.Now}
}

// ErrRedirect: a receiver answered with a redirect, which is not followed.
var ErrRedirect = errors.New("the receiver redirected; redirects are not followed")

// Send makes one attempt. A 2xx is success; anything else, a redirect
// included, is an error to retry.
func (s *Sender) Send(ctx context.Context, d Delivery, sub core.Subscription) error {
	if _, err := s.policy.CheckURL(ctx, sub.URL); err != nil {
		return fmt.Errorf("the url is no longer allowed: %v", core.AsRefusal(err).Message)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, strings.NewReader(string(d.Body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "parley-push/1")
	req.Header.Set("Parley-Event", d.Event)
	req.Header.Set("Parley-Delivery", d.ID)
	req.Header.Set("Parley-Signature", core.Sign(s.policy.Secret(sub.ID), s.now(), d.Body))
	res, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, answerCap))
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return nil
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return ErrRedirect
	}
	return fmt.Errorf("the receiver answered %d", res.StatusCode)
}
