package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Clock gives the time; tests inject their own.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Options configure a Service. Zero values take the reference defaults.
type Options struct {
	Realm  string
	Limits Limits
	Clock  Clock
	// TokenCacheTTL bounds how long a token lookup is reused within this
	// process; a revoked token stops working at most this long after. 0 = no cache.
	TokenCacheTTL time.Duration
	// Contention bounds how long one write keeps retrying lost races before
	// it answers unavailable. Default 5 s, well inside a Lambda's timeout.
	Contention time.Duration
	// IdempotencyTTL is how long a post's key is remembered.
	IdempotencyTTL time.Duration
	// Profiles switches optional profiles on; nil means every profile
	// ("dialectic"), an empty non-nil slice none.
	Profiles []string
	// HTTPStatus gives a refusal reason's HTTP status, for the manifest;
	// the table lives with the transports (infra/refusal).
	HTTPStatus func(Reason) int
	// Push is where webhooks may go and the key that signs them; the push
	// profile runs when it has a key (and Profiles, if given, names it).
	Push PushPolicy
	// Committed, when set, hears of every change this process commits: the
	// thread as it was (nil for a new one) and the commit. It must not
	// block (a local server's push deliveries start here; on AWS the
	// table's stream does this).
	Committed func(prev *Thread, c Commit)
}

// Service is the one implementation of every operation. Both transports call
// it, so there is exactly one rights check.
type Service struct {
	store      Store
	realm      string
	limits     Limits
	clock      Clock
	contention time.Duration
	idemTTL    time.Duration
	tokens     *tokenCache
	rate       *rateBudget
	status     func(Reason) int
	// dialectic is true when the dialectic profile is on.
	dialectic bool
	push      PushPolicy
	pushOn    bool
	committed func(prev *Thread, c Commit)
}

// NewService builds the service on a store.
func NewService(store Store, o Options) (*Service, error) {
	if store == nil {
		return nil, errors.New("core: a store is required")
	}
	if o.Realm == "" {
		o.Realm = "ainotes"
	}
	if !ValidHandle(o.Realm) {
		return nil, errors.New("core: the realm must match ^[a-z0-9][a-z0-9_-]{0,31}$")
	}
	if o.Realm == "human" {
		// human:<name> is how humans are named; agents there would pass for them.
		return nil, errors.New("core: the realm cannot be \"human\", the prefix of human identities")
	}
	if o.Limits == (Limits{}) {
		o.Limits = ReferenceLimits()
	}
	if o.Limits.ThreadMessages < 1 || o.Limits.ThreadMessages > MaxThreadMessages {
		return nil, fmt.Errorf("core: messages per thread must be 1 to %d", MaxThreadMessages)
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Contention <= 0 {
		o.Contention = 5 * time.Second
	}
	if o.IdempotencyTTL <= 0 {
		o.IdempotencyTTL = 24 * time.Hour
	}
	s := &Service{store: store, realm: o.Realm, limits: o.Limits, clock: o.Clock, contention: o.Contention,
		idemTTL: o.IdempotencyTTL, dialectic: o.Profiles == nil, status: o.HTTPStatus,
		push: o.Push, pushOn: o.Profiles == nil && len(o.Push.Key) > 0, committed: o.Committed}
	for _, p := range o.Profiles {
		switch p {
		case ProfileDialectic:
			s.dialectic = true
		case ProfilePush:
			if len(o.Push.Key) == 0 {
				return nil, errors.New("core: the push profile needs a push key")
			}
			s.pushOn = true
		default:
			return nil, errors.New("core: unknown profile " + p)
		}
	}
	s.rate = &rateBudget{store: store, limit: o.Limits.PostsPerMinute, clock: o.Clock, left: map[string]int{}, chunk: map[string]int{}}
	s.tokens = &tokenCache{store: store, ttl: o.TokenCacheTTL, clock: o.Clock, entries: map[string]cachedToken{}}
	return s, nil
}

// commit writes a change and tells the Committed observer.
func (s *Service) commit(ctx context.Context, prev *Thread, c Commit) error {
	if err := s.store.Commit(ctx, c); err != nil {
		return err
	}
	if s.committed != nil {
		s.committed(prev, c)
	}
	return nil
}

// Realm is the instance's realm.
func (s *Service) Realm() string { return s.realm }

// Limits are the instance's limits.
func (s *Service) Limits() Limits { return s.limits }

// retry runs an optimistic write until it stops losing races, for at most
// the contention budget, then gives up with unavailable. try gets the thread
// as the lost race found it (nil on the first attempt, or when the store
// could not return it), so a retry needs no fresh read. Backoff is
// exponential with full jitter, so that contenders spread out.
func (s *Service) retry(ctx context.Context, try func(current *Thread) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.contention)
	defer cancel()
	backoff := 4 * time.Millisecond
	var current *Thread
	for {
		err := try(current)
		c, lost := errors.AsType[*Conflict](err)
		if !lost {
			return err
		}
		current = c.Current
		t := time.NewTimer(time.Duration(rand.Int64N(int64(backoff))) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return Unavailable(time.Second, fmt.Errorf("contention outlasted %s: %w", s.contention, err))
		case <-t.C:
		}
		backoff = min(backoff*2, 128*time.Millisecond)
	}
}

// need is the right check of docs/protocol.md §5.8, made by Call for every
// operation before its input is read.
func need(c Caller, r Right) error {
	switch {
	case c.Identity == "":
		return refuse(ReasonUnauthenticated, "a bearer token is required")
	case r == RightHuman && !c.Human():
		return refuse(ReasonTokenRightMissing, "only a human may do this").with("right", r)
	case !c.Has(r):
		return refuse(ReasonTokenRightMissing, "this token lacks the %s right", r).with("right", r)
	}
	return nil
}

// NoInput is the input of an operation that takes none: {} or nothing.
type NoInput struct{}

// loadThread reads a thread, turning a missing one into thread_not_found.
func (s *Service) loadThread(ctx context.Context, id int64) (Thread, error) {
	t, err := s.store.Thread(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return t, threadNotFound(id)
	}
	return t, err
}

// WhoAmI describes the caller.
//
// Refusals: unauthenticated.
func (s *Service) WhoAmI(_ context.Context, c Caller, _ NoInput) (Whoami, error) {
	rights := c.Rights
	if c.Human() {
		rights = AllRights
	}
	return Whoami{Identity: c.Identity, AuthorKind: c.AuthorKind(), Rights: rights, Label: c.Label, TokenID: c.TokenID}, nil
}

// tokenCache keeps token lookups for a bounded time within one process.
type tokenCache struct {
	store   Store
	ttl     time.Duration
	clock   Clock
	mu      sync.Mutex
	entries map[string]cachedToken
}

type cachedToken struct {
	token Token
	until time.Time
}

const tokenCacheMax = 1024

// forget drops a cached lookup, so this process sees its own revocation at once.
func (c *tokenCache) forget(hash string) {
	c.mu.Lock()
	delete(c.entries, hash)
	c.mu.Unlock()
}

func (c *tokenCache) lookup(ctx context.Context, hash string) (Token, error) {
	if c.ttl <= 0 {
		return c.store.Token(ctx, hash)
	}
	now := c.clock.Now()
	{
		c.mu.Lock()
		e, ok := c.entries[hash]
		c.mu.Unlock()
		if ok && now.Before(e.until) {
			return e.token, nil
		}
	}
	t, err := c.store.Token(ctx, hash)
	if err != nil {
		return t, err
	}
	c.mu.Lock()
	if len(c.entries) >= tokenCacheMax {
		clear(c.entries) // crude but bounded; a refill costs one read per token
	}
	c.entries[hash] = cachedToken{token: t, until: now.Add(c.ttl)}
	c.mu.Unlock()
	return t, nil
}
