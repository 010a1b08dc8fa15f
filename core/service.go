package core

import (
	"context"
	"errors"
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
	// Attempts bounds the optimistic-concurrency retries of one write.
	Attempts int
	// IdempotencyTTL is how long a post's result is kept under its key.
	IdempotencyTTL time.Duration
	// Profiles switches optional profiles on; nil means every profile
	// ("dialectic"), an empty non-nil slice none.
	Profiles []string
	// IDBlock is how many ids one counter write reserves for this process,
	// so that a hot counter item is not written on every post. Ids stay
	// unique; across processes they are not in creation order. Default 32.
	IDBlock int
}

// Service is the one implementation of every operation. Both transports call
// it, so there is exactly one rights check.
type Service struct {
	store    Store
	realm    string
	limits   Limits
	clock    Clock
	attempts int
	idemTTL  time.Duration
	tokens   *tokenCache
	ids      *idBlocks
	rate     *rateBudget
	// dialectic is true when the dialectic profile is on.
	dialectic bool
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
	if o.Limits == (Limits{}) {
		o.Limits = ReferenceLimits()
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Attempts <= 0 {
		o.Attempts = 40
	}
	if o.IDBlock <= 0 {
		o.IDBlock = 32
	}
	if o.IdempotencyTTL <= 0 {
		o.IdempotencyTTL = 24 * time.Hour
	}
	s := &Service{store: store, realm: o.Realm, limits: o.Limits, clock: o.Clock, attempts: o.Attempts, idemTTL: o.IdempotencyTTL, dialectic: o.Profiles == nil}
	for _, p := range o.Profiles {
		switch p {
		case ProfileDialectic:
			s.dialectic = true
		default:
			return nil, errors.New("core: unknown profile " + p)
		}
	}
	s.rate = &rateBudget{store: store, limit: o.Limits.PostsPerMinute, clock: o.Clock, left: map[string]int{}}
	s.ids = &idBlocks{store: store, size: int64(o.IDBlock), next: map[string]int64{}, end: map[string]int64{}}
	s.tokens = &tokenCache{store: store, ttl: o.TokenCacheTTL, clock: o.Clock, entries: map[string]cachedToken{}}
	return s, nil
}

// Realm is the instance's realm.
func (s *Service) Realm() string { return s.realm }

// Dialectic reports whether the dialectic profile is on.
func (s *Service) Dialectic() bool { return s.dialectic }

// Limits are the instance's limits.
func (s *Service) Limits() Limits { return s.limits }

// retry runs an optimistic write until it stops losing races, then gives up
// with unavailable. Backoff is jittered so that contenders spread out.
func (s *Service) retry(ctx context.Context, try func() error) error {
	backoff := 2 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := try()
		if !errors.Is(err, ErrConflict) {
			return err
		}
		if attempt >= s.attempts {
			return Unavailable(time.Second)
		}
		wait := time.Duration(rand.Int64N(int64(backoff))) + time.Millisecond
		select {
		case <-ctx.Done():
			return Unavailable(time.Second)
		case <-time.After(wait):
		}
		backoff = min(backoff*2, 100*time.Millisecond)
	}
}

func (s *Service) page(limit int) int {
	if limit <= 0 {
		return s.limits.PageDefault
	}
	return min(limit, s.limits.PageMax)
}

func need(c Caller, r Right) error {
	if !c.Has(r) {
		return refuse(ReasonTokenRightMissing, "this token lacks the %s right", r).with("right", r)
	}
	return nil
}

// loadThread reads a thread, turning a missing one into thread_not_found.
func (s *Service) loadThread(ctx context.Context, id int64) (Thread, error) {
	t, err := s.store.Thread(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return t, refuse(ReasonThreadNotFound, "there is no thread %s", ThreadKey(id)).with("thread", ThreadKey(id))
	}
	return t, err
}

// WhoAmI describes the caller.
func (s *Service) WhoAmI(_ context.Context, c Caller) (Whoami, error) {
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

// idBlocks hands out ids from blocks reserved with one counter write each.
type idBlocks struct {
	store     Store
	size      int64
	mu        sync.Mutex
	next, end map[string]int64
}

func (b *idBlocks) take(ctx context.Context, seq string) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next[seq] >= b.end[seq] {
		last, err := b.store.NextIDs(ctx, seq, b.size)
		if err != nil {
			return 0, err
		}
		b.next[seq], b.end[seq] = last-b.size+1, last+1
	}
	id := b.next[seq]
	b.next[seq]++
	return id, nil
}
