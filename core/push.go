package core

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The push profile (docs/protocol.md §12): signed webhooks for listening
// agents. A subscription names a URL and the events it wants — turn (the
// caller's inbox gained a thread), state (a thread's state changed),
// message (a message was stored) — for one thread or the whole instance.
// Deliveries are made off the request path (infra/push) and signed with a
// secret that is shown once and never stored: it is derived from the
// instance's push key and the subscription's id.
const ProfilePush = "push"

// The events a subscription may ask for.
const (
	PushTurn    = "turn"
	PushState   = "state"
	PushMessage = "message"
)

// PushEvents in manifest order.
var PushEvents = []string{PushTurn, PushState, PushMessage}

// Subscription is one webhook: whose it is, where it goes, what it wants,
// and how its deliveries went.
type Subscription struct {
	ID        string // sub_ and 16 hex digits
	TokenID   string
	TokenHash string // the token's lookup key: its deliveries stop when it is revoked
	Identity  string
	URL       string
	Events    []string
	Thread    int64 // 0: the whole instance
	CreatedAt time.Time
	Stats     DeliveryStats
}

// DeliveryStats count a subscription's deliveries.
type DeliveryStats struct {
	Delivered   int64      `json:"delivered"`
	Failures    int64      `json:"failed_attempts"`
	Dropped     int64      `json:"dropped"`
	Pending     int64      `json:"pending"`
	LastSuccess *time.Time `json:"last_success"`
	LastFailure *time.Time `json:"last_failure"`
	LastError   string     `json:"last_error,omitempty"`
}

// Wants reports whether the subscription takes an event of a thread.
func (s Subscription) Wants(event string, thread int64) bool {
	return slices.Contains(s.Events, event) && (s.Thread == 0 || s.Thread == thread)
}

// Resolver looks up a host's addresses (net.DefaultResolver).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// PushPolicy is where webhooks may go.
type PushPolicy struct {
	// Key derives every subscription's signing secret; without a key the
	// push profile is off.
	Key []byte
	// Local allows plain http and loopback receivers (a local server only).
	Local bool
	// Resolver checks a URL's host; nil means net.DefaultResolver.
	Resolver Resolver
}

// Secret is a subscription's signing secret: derived, so never stored.
func (p PushPolicy) Secret(subID string) string {
	m := hmac.New(sha256.New, p.Key)
	m.Write([]byte("parley push secret\x00" + subID))
	return "whsec_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Sign gives the Parley-Signature header of a body sent at t:
// t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
func Sign(secret string, t time.Time, body []byte) string {
	ts := t.Unix()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(formatInt(ts) + "."))
	m.Write(body)
	return "t=" + formatInt(ts) + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks a Parley-Signature header against a body and the
// secret, allowing tolerance between the signature's time and now.
func VerifySignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	t, err := parseInt(ts)
	if err != nil || sig == "" {
		return errors.New("the signature header is not t=<unix>,v1=<hex>")
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return errors.New("the signature is too old or from the future")
	}
	want := Sign(secret, time.Unix(t, 0), body)
	if !hmac.Equal([]byte(want), []byte("t="+ts+",v1="+sig)) {
		return errors.New("the signature does not match")
	}
	return nil
}

// CheckURL applies the policy to a receiver's URL: https (plain http only
// to loopback on a local server), no credentials, and a host that resolves
// to public addresses only (never private, loopback, link-local or the
// cloud metadata address) on a deployed instance. It is checked when
// subscribing and again at every delivery (against DNS rebinding).
func (p PushPolicy) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	bad := func(format string, args ...any) error { return Invalid("url", format, args...) }
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, bad("url must be an absolute https URL")
	}
	if u.User != nil {
		return nil, bad("url must not carry credentials")
	}
	if len(raw) > 2048 {
		return nil, bad("url is limited to 2048 characters")
	}
	host := u.Hostname()
	local := p.Local && isLoopbackHost(host)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && local:
	default:
		return nil, bad("url must use https (plain http only to loopback on a local server)")
	}
	if local {
		return u, nil
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, bad("the url's host %q does not resolve", host)
	}
	for _, a := range addrs {
		if !PublicAddr(a) {
			return nil, bad("the url's host resolves to %s, a private, loopback, link-local or metadata address", a)
		}
	}
	return u, nil
}

func (p PushPolicy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no address")
	}
	return addrs, err
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// metadata are the cloud instance metadata addresses.
var metadata = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}

// sharedSpace is the carrier-grade NAT range (RFC 6598), not public either.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// PublicAddr reports whether a webhook may go to an address.
func PublicAddr(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case !a.IsValid(), a.IsLoopback(), a.IsPrivate(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(),
		a.IsMulticast(), a.IsUnspecified(), a.IsInterfaceLocalMulticast(), sharedSpace.Contains(a), slices.Contains(metadata, a):
		return false
	}
	return true
}

// SubscribeInput is subscribe's input.
type SubscribeInput struct {
	URL    string    `json:"url" required:"true" doc:"where to POST deliveries: an https URL"`
	Events []string  `json:"events" required:"true" doc:"any of turn (your inbox gained a thread), state (a thread's state changed), message (a message was stored)"`
	Thread ThreadRef `json:"thread" doc:"only this thread; omit for the whole instance"`
}

// NewSubscription is subscribe's answer: the only time the secret is shown.
type NewSubscription struct {
	SubscriptionView
	Secret string `json:"secret"`
}

// SubscriptionView is a subscription as shown: never its secret.
type SubscriptionView struct {
	ID        string        `json:"id"`
	URL       string        `json:"url"`
	Events    []string      `json:"events"`
	Thread    *string       `json:"thread"`
	Identity  string        `json:"identity"`
	CreatedAt time.Time     `json:"created_at"`
	Stats     DeliveryStats `json:"deliveries"`
}

func viewSubscription(s Subscription) SubscriptionView {
	v := SubscriptionView{ID: s.ID, URL: s.URL, Events: s.Events, Identity: s.Identity, CreatedAt: s.CreatedAt, Stats: s.Stats}
	if s.Thread != 0 {
		k := ThreadKey(s.Thread)
		v.Thread = &k
	}
	return v
}

// subscriptionsPerToken bounds one token's subscriptions.
const subscriptionsPerToken = 20

// Subscribe is subscribe: a webhook for the caller's token.
//
// Refusals: invalid_body, thread_not_found, limit_exceeded, unavailable.
func (s *Service) Subscribe(ctx context.Context, c Caller, in SubscribeInput) (NewSubscription, error) {
	if len(in.Events) == 0 {
		return NewSubscription{}, Invalid("events", "events must name at least one of turn, state, message")
	}
	var events []string
	for _, e := range in.Events {
		if !slices.Contains(PushEvents, e) {
			return NewSubscription{}, Invalid("events", "unknown event %q; events are turn, state and message", e)
		}
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	u, err := s.push.CheckURL(ctx, in.URL)
	if err != nil {
		return NewSubscription{}, err
	}
	if in.Thread != 0 {
		if _, err := s.loadThread(ctx, int64(in.Thread)); err != nil {
			return NewSubscription{}, err
		}
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return NewSubscription{}, err
	}
	sub := Subscription{ID: "sub_" + hex.EncodeToString(b[:]), TokenID: c.TokenID, TokenHash: c.tokenHash, Identity: c.Identity,
		URL: u.String(), Events: events, Thread: int64(in.Thread), CreatedAt: s.clock.Now().UTC()}
	err = s.store.PutSubscription(ctx, sub, subscriptionsPerToken)
	if errors.Is(err, ErrFull) {
		return NewSubscription{}, refuse(ReasonLimitExceeded, "a token may hold %d subscriptions; unsubscribe one first", subscriptionsPerToken).with("limit", "subscriptions").with("value", subscriptionsPerToken)
	}
	if err != nil {
		return NewSubscription{}, err
	}
	return NewSubscription{SubscriptionView: viewSubscription(sub), Secret: s.push.Secret(sub.ID)}, nil
}

// SubscriptionPage lists the caller's subscriptions.
type SubscriptionPage struct {
	Subscriptions []SubscriptionView `json:"subscriptions"`
}

// ListSubscriptions is list_subscriptions: the caller's token's
// subscriptions with how their deliveries went.
//
// Refusals: unavailable.
func (s *Service) ListSubscriptions(ctx context.Context, c Caller, _ NoInput) (SubscriptionPage, error) {
	subs, err := s.store.Subscriptions(ctx, c.TokenID)
	if err != nil {
		return SubscriptionPage{}, err
	}
	page := SubscriptionPage{Subscriptions: make([]SubscriptionView, 0, len(subs))}
	for _, sub := range subs {
		page.Subscriptions = append(page.Subscriptions, viewSubscription(sub))
	}
	return page, nil
}

var subscriptionID = regexp.MustCompile(`^sub_[0-9a-f]{16}$`)

// UnsubscribeInput is unsubscribe's input.
type UnsubscribeInput struct {
	ID string `json:"id" in:"path" required:"true" doc:"the subscription's id: sub_ and 16 hex digits"`
}

// Unsubscribe is unsubscribe: deliveries stop (one in flight may still arrive).
//
// Refusals: invalid_body, not_found, unavailable.
func (s *Service) Unsubscribe(ctx context.Context, c Caller, in UnsubscribeInput) (SubscriptionView, error) {
	if !subscriptionID.MatchString(in.ID) {
		return SubscriptionView{}, Invalid("id", "a subscription id is sub_ and 16 hex digits")
	}
	notFound := refuse(ReasonNotFound, "you have no subscription %s", in.ID).with("id", in.ID)
	// The read shapes the answer; the delete's condition decides.
	sub, err := s.store.Subscription(ctx, in.ID)
	if errors.Is(err, ErrNotFound) || (err == nil && sub.TokenID != c.TokenID) {
		return SubscriptionView{}, notFound
	}
	if err != nil {
		return SubscriptionView{}, err
	}
	err = s.store.DeleteSubscription(ctx, in.ID, c.TokenID)
	if errors.Is(err, ErrNotFound) {
		return SubscriptionView{}, notFound
	}
	if err != nil {
		return SubscriptionView{}, err
	}
	return viewSubscription(sub), nil
}

// Change is one committed change as deliveries are planned from it: a
// thread as it is now and as it was (Old nil when new), a stored message,
// or an appended event. Locally they come from the service's commits, on
// AWS from the table's stream.
type Change struct {
	Thread  *Thread
	Old     *Thread
	Message *Message
	Event   *Event
}

// Forget removes a subscription whose token was revoked: nobody can list
// or remove it any more, and planning deliveries for it would cost for
// ever. Gone already is fine.
func (s *Service) Forget(ctx context.Context, sub Subscription) error {
	err := s.store.DeleteSubscription(ctx, sub.ID, sub.TokenID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Push is the policy deliveries follow (infra/push reads it).
func (s *Service) Push() PushPolicy { return s.push }

// Subscriptions lists every subscription, for the deliverer.
func (s *Service) AllSubscriptions(ctx context.Context) ([]Subscription, error) {
	return s.store.Subscriptions(ctx, "")
}

// Subscription reads one subscription, for the deliverer.
func (s *Service) Subscription(ctx context.Context, id string) (Subscription, error) {
	return s.store.Subscription(ctx, id)
}

// RecordDelivery counts a delivery's outcome.
func (s *Service) RecordDelivery(ctx context.Context, id string, o DeliveryOutcome) error {
	return s.store.RecordDelivery(ctx, id, o)
}

// PushOn reports whether the push profile runs.
func (s *Service) PushOn() bool { return s.pushOn }

// TokenRevoked reports whether the token behind a subscription is revoked
// or gone: its deliveries stop.
func (s *Service) TokenRevoked(ctx context.Context, hash string) (bool, error) {
	t, err := s.store.Token(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return true, nil
	}
	return err == nil && t.RevokedAt != nil, err
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

func parseInt(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// DeliveryOutcome is what one delivery attempt came to.
type DeliveryOutcome struct {
	At        time.Time
	Delivered bool   // a 2xx: done
	Dropped   bool   // given up (24 h of failures, or its token revoked)
	Queued    int64  // this many new deliveries entered the queue
	Error     string // why the attempt failed
}
