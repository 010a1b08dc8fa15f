package push_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/push"
	"github.com/ainotes/parley/infra/testenv"
)

// receiver is a real HTTP endpoint on loopback that records deliveries
// and answers as told.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(n int) int // status for the n-th request (from 1)
	n      atomic.Int64
}

type delivery struct {
	id, event, signature string
	body                 []byte
	status               int
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		n := int(r.n.Add(1))
		status := http.StatusNoContent
		if r.answer != nil {
			status = r.answer(n)
		}
		r.mu.Lock()
		r.got = append(r.got, delivery{id: req.Header.Get("Parley-Delivery"), event: req.Header.Get("Parley-Event"), signature: req.Header.Get("Parley-Signature"), body: body, status: status})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitFor polls until cond holds or the test's patience ends; it asserts
// an outcome, not a speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

// world is a service running the push profile with a local runner whose
// retries wait milliseconds, not seconds.
type world struct {
	t      *testing.T
	env    *testenv.Env
	runner *push.Runner
	svc    *core.Service
}

var key = []byte("test push key, 32 bytes or so...")

func newWorld(t *testing.T) *world {
	var runner atomic.Pointer[push.Runner]
	env := testenv.New(t, core.Options{Push: core.PushPolicy{Key: key, Local: true},
		Committed: func(prev *core.Thread, c core.Commit) {
			if r := runner.Load(); r != nil {
				r.Observe(prev, c)
			}
		}})
	d, err := push.NewDeliverer(env.Service, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	d.FirstBackoff = 20 * time.Millisecond
	r := push.NewRunner(d)
	runner.Store(r)
	ctx, cancel := context.WithCancel(context.Background())
	r.Run(ctx, 2)
	t.Cleanup(func() { cancel(); r.Wait() })
	return &world{t: t, env: env, runner: r, svc: env.Service}
}

func (w *world) caller(secret string) core.Caller {
	c, err := w.svc.Authenticate(context.Background(), secret)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *world) post(c core.Caller, env string) core.PostResult {
	res, err := w.svc.PostJSON(context.Background(), c, []byte(env))
	if err != nil {
		w.t.Fatalf("post %s: %v", env, err)
	}
	return res
}

func (w *world) subscribe(c core.Caller, url string, events ...string) core.NewSubscription {
	s, err := w.svc.Subscribe(context.Background(), c, core.SubscribeInput{URL: url, Events: events})
	if err != nil {
		w.t.Fatalf("subscribe: %v", err)
	}
	return s
}

// TestTurnDelivery: bob subscribes to his turns; when alice's question in
// a thread awaits him, a delivery arrives, signed with the secret bob was
// shown, carrying the thread as bob's inbox shows it.
func TestTurnDelivery(t *testing.T) {
	w := newWorld(t)
	cast := w.env.Cast(t)
	alice, bob := w.caller(cast.Alice), w.caller(cast.Bob)
	rcv := newReceiver(t, nil)
	sub := w.subscribe(bob, rcv.srv.URL+"/hook", core.PushTurn)
	if !strings.HasPrefix(sub.Secret, "whsec_") {
		t.Fatalf("secret %q", sub.Secret)
	}
	opened := w.post(alice, `{"kind":"ask","body":"who reviews #42?"}`) // an open call: bob's inbox gains it
	waitFor(t, "the open call's turn", func() bool { return len(rcv.deliveries()) >= 1 })
	got := rcv.deliveries()[0]
	if got.event != "turn" || !strings.HasPrefix(got.id, "dlv_") {
		t.Fatalf("delivery %+v", got)
	}
	if err := core.VerifySignature(sub.Secret, got.signature, got.body, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	if err := core.VerifySignature("whsec_wrong", got.signature, got.body, time.Now(), 5*time.Minute); err == nil {
		t.Fatal("a wrong secret verifies")
	}
	var entry map[string]any
	if err := json.Unmarshal(got.body, &entry); err != nil || entry["id"] != opened.Thread.ID || entry["awaiting"].(map[string]any)["scope"] != "any" {
		t.Fatalf("the body is not the inbox entry: %s", got.body)
	}
	// A reply that awaits bob: another turn.
	ans := w.post(w.caller(cast.Carol), `{"kind":"answer","thread":"`+opened.Thread.ID+`","body":"I will"}`)
	w.post(alice, `{"kind":"clarify","thread":"`+opened.Thread.ID+`","parent":"`+ans.Message.ID+`","body":"carol, not bob"}`) // awaits carol: no turn for bob
	w.post(alice, `{"kind":"ask","thread":"`+opened.Thread.ID+`","body":"bob, your view?","from":{"extension":"x"}}`)         // awaits the root's author (alice): none
	time.Sleep(100 * time.Millisecond)
	for _, d := range rcv.deliveries() {
		if d.event != "turn" {
			t.Fatalf("an event bob did not ask for: %s", d.event)
		}
	}
	if n := len(rcv.deliveries()); n != 1 {
		t.Fatalf("%d turns for bob, want 1 (the others were not his)", n)
	}
}

// TestRetriesUntilAccepted: a receiver that fails three times, then
// accepts, gets the same delivery id every time and accepts it once.
func TestRetriesUntilAccepted(t *testing.T) {
	w := newWorld(t)
	cast := w.env.Cast(t)
	alice := w.caller(cast.Alice)
	rcv := newReceiver(t, func(n int) int {
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	sub := w.subscribe(alice, rcv.srv.URL, core.PushState)
	w.post(alice, `{"kind":"ask","body":"state, please"}`) // the thread's opening event
	waitFor(t, "an accepted delivery", func() bool {
		for _, d := range rcv.deliveries() {
			if d.status == http.StatusOK {
				return true
			}
		}
		return false
	})
	time.Sleep(200 * time.Millisecond) // room for a wrong extra attempt to show
	got := rcv.deliveries()
	if len(got) != 4 {
		t.Fatalf("%d attempts, want 3 failures and 1 success", len(got))
	}
	for _, d := range got {
		if d.id != got[0].id {
			t.Fatalf("the delivery id changed between attempts: %s, %s", got[0].id, d.id)
		}
	}
	waitFor(t, "the stats", func() bool {
		page, _ := w.svc.ListSubscriptions(context.Background(), alice, core.NoInput{})
		s := page.Subscriptions[0].Stats
		return s.Delivered == 1 && s.Failures == 3 && s.Pending == 0 && s.LastSuccess != nil && s.LastFailure != nil
	})
	_ = sub
}

// TestUnsubscribeAndRevocationStopDeliveries.
func TestUnsubscribeAndRevocationStopDeliveries(t *testing.T) {
	w := newWorld(t)
	cast := w.env.Cast(t)
	alice := w.caller(cast.Alice)
	ctx := context.Background()
	kept, gone := newReceiver(t, nil), newReceiver(t, nil)
	w.subscribe(alice, kept.srv.URL, core.PushMessage)
	s := w.subscribe(alice, gone.srv.URL, core.PushMessage)
	w.post(alice, `{"kind":"ask","body":"first"}`)
	waitFor(t, "both receive", func() bool { return len(kept.deliveries()) == 1 && len(gone.deliveries()) == 1 })
	if _, err := w.svc.Unsubscribe(ctx, alice, core.UnsubscribeInput{ID: s.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Unsubscribe(ctx, w.caller(cast.Bob), core.UnsubscribeInput{ID: s.ID}); err == nil {
		t.Fatal("bob removed alice's subscription")
	}
	w.post(alice, `{"kind":"ask","body":"second"}`)
	waitFor(t, "the kept one receives", func() bool { return len(kept.deliveries()) == 2 })
	time.Sleep(3 * time.Second) // past the deliverer's cached list of subscriptions
	w.post(alice, `{"kind":"ask","body":"third"}`)
	waitFor(t, "the kept one receives again", func() bool { return len(kept.deliveries()) == 3 })
	if n := len(gone.deliveries()); n != 1 {
		t.Fatalf("an unsubscribed receiver got %d deliveries", n)
	}
	// A revoked token's subscriptions stop.
	tok, _ := w.svc.TokenPage(ctx, core.ListTokensInput{})
	for _, tk := range tok.Tokens {
		if tk.Identity == "ainotes:alice" {
			if _, err := w.svc.RevokeToken(ctx, tk.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.post(w.caller(cast.Bob), `{"kind":"ask","body":"after the revocation"}`)
	time.Sleep(500 * time.Millisecond)
	if n := len(kept.deliveries()); n != 3 {
		t.Fatalf("a revoked token's subscription got %d deliveries", n)
	}
	waitFor(t, "the revoked token's subscription removed", func() bool {
		subs, _ := w.svc.AllSubscriptions(ctx)
		return len(subs) == 0
	})
}

// resolver answers every host with fixed addresses.
type resolver []netip.Addr

func (r resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) { return r, nil }

// TestURLPolicy: on a deployed instance a webhook goes only to public
// addresses over https; private, loopback, link-local and metadata
// addresses are refused, by IP or by what a name resolves to.
func TestURLPolicy(t *testing.T) {
	deployed := core.PushPolicy{Key: key, Resolver: resolver{netip.MustParseAddr("93.184.216.34")}}
	local := core.PushPolicy{Key: key, Local: true, Resolver: resolver{netip.MustParseAddr("93.184.216.34")}}
	cases := []struct {
		name   string
		policy core.PushPolicy
		url    string
		ok     bool
	}{
		{"a public https URL", deployed, "https://hooks.example.org/parley", true},
		{"plain http", deployed, "http://hooks.example.org/parley", false},
		{"a private address", deployed, "https://10.1.2.3/hook", false},
		{"another private range", deployed, "https://192.168.1.9/hook", false},
		{"loopback", deployed, "https://127.0.0.1:8443/hook", false},
		{"IPv6 loopback", deployed, "https://[::1]/hook", false},
		{"link-local", deployed, "https://169.254.10.10/hook", false},
		{"the metadata address", deployed, "https://169.254.169.254/latest/meta-data", false},
		{"IPv6 metadata", deployed, "https://[fd00:ec2::254]/", false},
		{"carrier-grade NAT", deployed, "https://100.64.1.1/", false},
		{"an IPv4-mapped private address", deployed, "https://[::ffff:10.0.0.1]/", false},
		{"credentials in the URL", deployed, "https://user:pw@hooks.example.org/", false},
		{"not a URL", deployed, "hooks.example.org", false},
		{"a name resolving to a private address", core.PushPolicy{Key: key, Resolver: resolver{netip.MustParseAddr("10.0.0.7")}}, "https://internal.example.org/", false},
		{"a name resolving to public and private", core.PushPolicy{Key: key, Resolver: resolver{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}}, "https://mixed.example.org/", false},
		{"loopback over http on a local server", local, "http://127.0.0.1:9999/hook", true},
		{"localhost on a local server", local, "http://localhost:9999/hook", true},
		{"plain http elsewhere on a local server", local, "http://hooks.example.org/", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.policy.CheckURL(context.Background(), tc.url)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil && (core.AsRefusal(err).Reason != core.ReasonInvalidBody || core.AsRefusal(err).Detail["field"] != "url") {
				t.Fatalf("refusal %+v", core.AsRefusal(err))
			}
		})
	}
}

// TestNoRedirectsNoPrivateDial: a receiver's redirect is not followed (the
// target gets nothing; the attempt fails), and on a deployed instance the
// sender refuses to connect to a non-public address even when the name
// once resolved to a public one (DNS rebinding).
func TestNoRedirectsNoPrivateDial(t *testing.T) {
	target := newReceiver(t, nil)
	redirector := httptest.NewServer(http.RedirectHandler(target.srv.URL, http.StatusFound))
	defer redirector.Close()
	sub := core.Subscription{ID: "sub_0000000000000001", URL: redirector.URL, Events: []string{core.PushState}}
	d := push.Delivery{ID: "dlv_1", Subscription: sub.ID, Event: core.PushState, Body: json.RawMessage(`{}`)}
	err := push.NewSender(core.PushPolicy{Key: key, Local: true}).Send(context.Background(), d, sub)
	if !errors.Is(err, push.ErrRedirect) || len(target.deliveries()) != 0 {
		t.Fatalf("redirect: %v, target got %d", err, len(target.deliveries()))
	}
	// Deployed: the name "resolves" to a public address, but the connection
	// goes to loopback (the receiver) — refused at the dial.
	rebinding := core.PushPolicy{Key: key, Resolver: resolver{netip.MustParseAddr("93.184.216.34")}}
	sub.URL = strings.Replace(target.srv.URL, "http://127.0.0.1", "https://rebind.example.org", 1)
	sender := push.NewSender(rebinding)
	err = sender.Send(context.Background(), d, sub)
	if err == nil || len(target.deliveries()) != 0 {
		t.Fatalf("a dial to loopback went through: %v", err)
	}
}

// TestSubscribeRefusals: bad events, a URL the policy refuses, a missing
// thread; and the secret is never listed.
// TestSubscribeRefusals: each bad subscribe is refused with its reason and
// stores nothing; a token's bound holds under concurrent subscribes; one
// token cannot see or remove another's subscription; the secret is shown
// once and never listed.
func TestSubscribeRefusals(t *testing.T) {
	w := newWorld(t)
	cast := w.env.Cast(t)
	bob, alice := w.caller(cast.Bob), w.caller(cast.Alice)
	ctx := context.Background()
	reason := func(err error) core.Reason {
		if r, ok := errors.AsType[*core.Refusal](err); ok {
			return r.Reason
		}
		return ""
	}
	for _, tc := range []struct {
		name  string
		in    core.SubscribeInput
		field string
	}{
		{"no events", core.SubscribeInput{URL: "http://127.0.0.1:1/x"}, "events"},
		{"an unknown event", core.SubscribeInput{URL: "http://127.0.0.1:1/x", Events: []string{"everything"}}, "events"},
		{"another scheme", core.SubscribeInput{URL: "ftp://127.0.0.1/x", Events: []string{"turn"}}, "url"},
		{"a thread that does not exist", core.SubscribeInput{URL: "http://127.0.0.1:1/x", Events: []string{"state"}, Thread: 999}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.svc.Subscribe(ctx, bob, tc.in)
			want := core.ReasonInvalidBody
			if tc.field == "" {
				want = core.ReasonThreadNotFound
			}
			r, _ := errors.AsType[*core.Refusal](err)
			if reason(err) != want || (tc.field != "" && r.Detail["field"] != tc.field) {
				t.Fatalf("got %v, want %s on %q", err, want, tc.field)
			}
		})
	}
	if page, _ := w.svc.ListSubscriptions(ctx, bob, core.NoInput{}); len(page.Subscriptions) != 0 {
		t.Fatalf("refused subscribes stored %d", len(page.Subscriptions))
	}

	// 25 at once against a bound of 20: exactly 20 stored.
	var okN, fullN atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 25; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.svc.Subscribe(ctx, bob, core.SubscribeInput{URL: "http://127.0.0.1:1/x", Events: []string{core.PushState}})
			switch {
			case err == nil:
				okN.Add(1)
			case reason(err) == core.ReasonLimitExceeded:
				fullN.Add(1)
			case reason(err) == core.ReasonUnavailable: // contention on the counter: the caller retries
			default:
				t.Errorf("subscribe: %v", err)
			}
		}()
	}
	wg.Wait()
	page, err := w.svc.ListSubscriptions(ctx, bob, core.NoInput{})
	if err != nil || okN.Load() > 20 || len(page.Subscriptions) != int(okN.Load()) {
		t.Fatalf("%d accepted, %d listed, %d full: %v", okN.Load(), len(page.Subscriptions), fullN.Load(), err)
	}
	for n := okN.Load(); n < 20; n++ { // fill up what contention left
		w.subscribe(bob, "http://127.0.0.1:1/x", core.PushState)
	}
	if _, err := w.svc.Subscribe(ctx, bob, core.SubscribeInput{URL: "http://127.0.0.1:1/x", Events: []string{core.PushTurn}}); reason(err) != core.ReasonLimitExceeded {
		t.Fatalf("the 21st: %v", err)
	}
	page, _ = w.svc.ListSubscriptions(ctx, bob, core.NoInput{})
	first := page.Subscriptions[0].ID

	// Alice neither sees nor removes bob's.
	if mine, _ := w.svc.ListSubscriptions(ctx, alice, core.NoInput{}); len(mine.Subscriptions) != 0 {
		t.Fatalf("alice lists %d of bob's", len(mine.Subscriptions))
	}
	if _, err := w.svc.Unsubscribe(ctx, alice, core.UnsubscribeInput{ID: first}); reason(err) != core.ReasonNotFound {
		t.Fatalf("alice unsubscribes bob's: %v", err)
	}
	if _, err := w.svc.Unsubscribe(ctx, bob, core.UnsubscribeInput{ID: "sub_1"}); reason(err) != core.ReasonInvalidBody {
		t.Fatalf("a malformed id: %v", err)
	}
	// Unsubscribing gives the slot back.
	if _, err := w.svc.Unsubscribe(ctx, bob, core.UnsubscribeInput{ID: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Unsubscribe(ctx, bob, core.UnsubscribeInput{ID: first}); reason(err) != core.ReasonNotFound {
		t.Fatalf("unsubscribing twice: %v", err)
	}
	s := w.subscribe(bob, "http://127.0.0.1:1/y", core.PushMessage)
	page, _ = w.svc.ListSubscriptions(ctx, bob, core.NoInput{})
	raw, _ := json.Marshal(page)
	if strings.Contains(string(raw), s.Secret) || len(page.Subscriptions) != 20 {
		t.Fatalf("the listing: %s", raw)
	}
}
