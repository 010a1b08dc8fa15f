package push

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/ainotes/parley/core"
)

// Deliverer plans deliveries and makes attempts against one service; the
// local runner and the AWS handlers share it.
type Deliverer struct {
	svc    *core.Service
	sender *Sender
	log    *slog.Logger
	now    func() time.Time

	// FirstBackoff is the first retry's wait (tests shorten it); the
	// waits double from there, with jitter, up to an hour.
	FirstBackoff time.Duration

	mu      sync.Mutex
	subs    []core.Subscription
	fetched time.Time
}

// subsTTL is how long a list of subscriptions is reused when planning: a
// new subscription starts receiving within it.
const subsTTL = 2 * time.Second

// NewDeliverer builds the delivery core for a service running the push profile.
func NewDeliverer(svc *core.Service, log *slog.Logger) (*Deliverer, error) {
	if svc == nil || log == nil {
		return nil, errors.New("push: a service and a logger are required")
	}
	if !svc.PushOn() {
		return nil, errors.New("push: the service does not run the push profile")
	}
	return &Deliverer{svc: svc, sender: NewSender(svc.Push()), log: log, now: time.Now, FirstBackoff: firstBackoff}, nil
}

// subscriptions lists every subscription, reused for subsTTL.
func (d *Deliverer) subscriptions(ctx context.Context) ([]core.Subscription, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.subs != nil && d.now().Sub(d.fetched) < subsTTL {
		return d.subs, nil
	}
	subs, err := d.svc.AllSubscriptions(ctx)
	if err != nil {
		return nil, err
	}
	d.subs, d.fetched = subs, d.now()
	return subs, nil
}

// Plan turns changes into deliveries for the current subscriptions.
func (d *Deliverer) Plan(ctx context.Context, changes []core.Change) ([]Delivery, error) {
	subs, err := d.subscriptions(ctx)
	if err != nil || len(subs) == 0 {
		return nil, err
	}
	return Plan(changes, subs, d.now())
}

// Queued counts planned deliveries as pending on their subscriptions,
// once they wait on a queue: one write per subscription, whatever the
// number of its deliveries.
func (d *Deliverer) Queued(ctx context.Context, ds []Delivery) error {
	counts := map[string]int64{}
	var order []string
	for _, dl := range ds {
		if counts[dl.Subscription] == 0 {
			order = append(order, dl.Subscription)
		}
		counts[dl.Subscription]++
	}
	for _, sub := range order {
		if err := d.svc.RecordDelivery(ctx, sub, core.DeliveryOutcome{At: d.now(), Queued: counts[sub]}); err != nil {
			return err
		}
	}
	return nil
}

// Attempt makes one attempt of a delivery and records it. It returns the
// delivery to try again and when, or nil when it is done: delivered,
// dropped (24 hours of failures, its token revoked) or unsubscribed. An
// error means the attempt could not even be made (storage trouble): try
// the same delivery again.
func (d *Deliverer) Attempt(ctx context.Context, dl Delivery) (*Delivery, error) {
	sub, err := d.svc.Subscription(ctx, dl.Subscription)
	if errors.Is(err, core.ErrNotFound) {
		return nil, nil // unsubscribed: nothing to do, nothing to count
	}
	if err != nil {
		return nil, err
	}
	revoked, err := d.svc.TokenRevoked(ctx, sub.TokenHash)
	if err != nil {
		return nil, err
	}
	now := d.now()
	if revoked {
		// Subscriptions die with their token: this one is removed, and
		// the deliveries still queued for it find it gone.
		d.log.Info("push dropped", slog.String("delivery", dl.ID), slog.String("subscription", sub.ID), slog.String("why", "token revoked; subscription removed"))
		return nil, d.svc.Forget(ctx, sub)
	}
	sendErr := d.sender.Send(ctx, dl, sub)
	if sendErr == nil {
		d.log.Info("push delivered", slog.String("delivery", dl.ID), slog.String("subscription", sub.ID), slog.String("event", dl.Event), slog.Int("attempt", dl.Attempt+1))
		return nil, d.svc.RecordDelivery(ctx, sub.ID, core.DeliveryOutcome{At: now, Delivered: true})
	}
	at, again := next(dl, now, d.FirstBackoff)
	outcome := core.DeliveryOutcome{At: now, Error: sendErr.Error(), Dropped: !again}
	d.log.Warn("push attempt failed", slog.String("delivery", dl.ID), slog.String("subscription", sub.ID), slog.Int("attempt", dl.Attempt+1), slog.String("error", sendErr.Error()), slog.Bool("dropped", !again))
	if err := d.svc.RecordDelivery(ctx, sub.ID, outcome); err != nil {
		return nil, err
	}
	if !again {
		return nil, nil
	}
	next := dl
	next.Attempt++
	next.NotBefore = at
	return &next, nil
}

// Runner is the local server's push: the service's commits feed it
// (Observe, which never blocks the request), a few workers make the
// attempts, and retries wait on timers in this process — the same plan,
// attempts and retry policy as on AWS, where a stream and a queue stand in
// for the commits and the timers.
type Runner struct {
	d       *Deliverer
	changes chan []core.Change
	work    chan Delivery
	wg      sync.WaitGroup
}

// NewRunner builds the local runner.
func NewRunner(d *Deliverer) *Runner {
	return &Runner{d: d, changes: make(chan []core.Change, 4096), work: make(chan Delivery, 4096)}
}

// Observe takes a commit's changes; it is core.Options.Committed.
func (r *Runner) Observe(prev *core.Thread, c core.Commit) {
	select {
	case r.changes <- FromCommit(prev, c):
	default:
		r.d.log.Error("push: the change queue is full; a commit's deliveries are lost")
	}
}

// Run plans and delivers until ctx ends.
func (r *Runner) Run(ctx context.Context, workers int) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case chs := <-r.changes:
				planned, err := r.d.Plan(ctx, chs)
				if err == nil {
					err = r.d.Queued(ctx, planned)
				}
				if err != nil {
					r.d.log.Error("push: planning failed", slog.String("error", err.Error()))
					continue
				}
				for _, dl := range planned {
					r.enqueue(ctx, dl)
				}
			}
		}
	}()
	for range max(1, workers) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case dl := <-r.work:
					next, err := r.d.Attempt(ctx, dl)
					if err != nil {
						at := r.d.now().Add(r.d.FirstBackoff)
						dl.NotBefore = at
						next = &dl
					}
					if next != nil {
						r.later(ctx, *next)
					}
				}
			}
		}()
	}
}

func (r *Runner) enqueue(ctx context.Context, dl Delivery) {
	select {
	case r.work <- dl:
	case <-ctx.Done():
	}
}

// later puts a delivery back on the queue when it is due.
func (r *Runner) later(ctx context.Context, dl Delivery) {
	wait := dl.NotBefore.Sub(r.d.now())
	time.AfterFunc(max(0, wait), func() { r.enqueue(ctx, dl) })
}

// Wait waits for the workers after ctx ended.
func (r *Runner) Wait() { r.wg.Wait() }
