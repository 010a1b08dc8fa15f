package core

import (
	"context"
	"errors"
	"time"
)

// Store is what the service needs from storage. The one implementation is
// DynamoDB (infra/dynamo); every write that depends on what was read is
// conditional, so a concurrent request cannot slip between read and write.
//
// Positions (the After fields and the positions returned) are the store's
// own strings; core wraps them in opaque cursors and never looks inside. A
// position the store did not issue is ErrPosition.
type Store interface {
	// Token returns the token stored under the SHA-256 hex of its secret.
	Token(ctx context.Context, hash string) (Token, error)
	// PutToken stores a new token; ErrExists, with the stored one, when one
	// with that hash is stored.
	PutToken(ctx context.Context, t Token) (Token, error)
	// Tokens pages through tokens in id order; next is the id to go on
	// after ("" at the end).
	Tokens(ctx context.Context, q TokenQuery) (page []Token, next string, err error)
	// RevokeToken marks the token stored under hash revoked; it must exist.
	RevokeToken(ctx context.Context, hash string, at time.Time) error

	// NextID reserves the next number of a sequence ("thread", "claim").
	NextID(ctx context.Context, seq string) (int64, error)

	Thread(ctx context.Context, id int64) (Thread, error)
	// ThreadAndMessage reads a thread and a message (found by its id, in
	// whichever thread it is) in one round trip, strongly consistent; a
	// missing message comes back with ID 0.
	ThreadAndMessage(ctx context.Context, thread, msg int64) (Thread, Message, error)
	// Messages reads a thread and a page of its messages in order of
	// creation, strongly consistent; more reports whether others follow.
	Messages(ctx context.Context, q MessageQuery) (th Thread, page []Message, more bool, err error)
	// MessagesByID reads messages by id (any threads); missing ones are left out.
	MessagesByID(ctx context.Context, ids []int64) ([]Message, error)

	// Commit writes one change atomically, or nothing. It fails with a
	// *Conflict (errors.Is ErrConflict) when the thread is no longer at
	// c.PrevVersion, with ErrExists when the idempotency key has been used,
	// and with ErrDuplicate when the dedupe marker exists. The store stamps
	// the time order of the feeds itself, just before the write (FeedSettle).
	Commit(ctx context.Context, c Commit) error
	// Idempotent returns the record stored under an idempotency key.
	Idempotent(ctx context.Context, key string) (Idempotency, error)

	// Threads lists threads newest first, optionally in one state, after a
	// thread id; next is the id to go on after (0 at the end). A page may
	// be short, even empty, and still have a next.
	Threads(ctx context.Context, q ThreadQuery) (page []Thread, next int64, err error)
	// Events lists events oldest first, of one thread or of all, after a
	// position. The instance-wide feed never hands out a position past
	// now − FeedSettle, so an entry that becomes visible late is still read.
	Events(ctx context.Context, q EventQuery) ([]Event, string, error)
	// Awaiting lists the threads whose awaiting may name the caller, in the
	// order awaiting was set, after a position, with the same settle rule as
	// Events. It reads a bounded number of index pages per call, keeps what
	// Keep accepts (applied to the item as read), and returns the position
	// reached even when fewer than Limit threads were kept.
	Awaiting(ctx context.Context, q AwaitingQuery) ([]Thread, string, error)
	// Queue lists the threads in the review queue, oldest first, after a position.
	Queue(ctx context.Context, q QueueQuery) ([]Thread, string, error)
	// FeedSettle is how long after its stamp a committed entry may take to
	// become visible to feed readers (commit deadline plus index lag).
	FeedSettle() time.Duration

	// ReserveRate adds n posts to a per-token, per-window counter if the
	// total stays within limit, and reports the total after and whether it
	// did. The counter item expires at expires. Release gives n back.
	ReserveRate(ctx context.Context, key string, n, limit int, expires time.Time) (int, bool, error)

	// PutSubscription stores a new subscription unless its token holds
	// limit already (ErrFull).
	PutSubscription(ctx context.Context, s Subscription, limit int) error
	// Subscription reads one subscription.
	Subscription(ctx context.Context, id string) (Subscription, error)
	// Subscriptions lists a token's subscriptions ("" for every one).
	Subscriptions(ctx context.Context, tokenID string) ([]Subscription, error)
	// DeleteSubscription removes a token's subscription; ErrNotFound when
	// the token has none of that id.
	DeleteSubscription(ctx context.Context, id, tokenID string) error
	// RecordDelivery counts a delivery's outcome on its subscription (a
	// subscription that is gone is not an error).
	RecordDelivery(ctx context.Context, id string, o DeliveryOutcome) error

	// Claim reads one claim item, strongly consistent.
	Claim(ctx context.Context, id int64) (Claim, error)
	// ClaimHistory reads a claim with its records, oldest first.
	ClaimHistory(ctx context.Context, id int64) (Claim, []ClaimRecord, error)
	// Claims lists claims newest first, by thread and/or state, after a
	// claim id; next as for Threads.
	Claims(ctx context.Context, q ClaimQuery) (page []Claim, next int64, err error)
}

// Commit is one atomic write: the thread at its new version, and with it the
// message, the event and the idempotency record that belong to the change.
type Commit struct {
	Thread      Thread
	PrevVersion int64 // 0: the thread must not exist yet
	Message     *Message
	Event       *Event
	Idempotency *Idempotency
	// Claims written with the change, each conditioned on its version.
	Claims []ClaimChange
	// Dedupe, when set, is a key that must not exist yet in the thread: the
	// same identity's same body (ErrDuplicate).
	Dedupe string
	// Open are other threads the change touches (a superseded claim's): each
	// must not be closed and confirmed when the commit lands (else a *Conflict).
	Open []int64
}

// Conflict is the error of a commit that lost a race: the thread changed
// since it was read. Current is the thread as the failed condition found
// it, when the store could return it, so a retry need not read it again.
type Conflict struct {
	Current *Thread
}

func (c *Conflict) Error() string { return "conflict: the thread changed" }

// Is makes errors.Is(err, ErrConflict) hold.
func (c *Conflict) Is(target error) bool { return target == ErrConflict }

// ClaimChange writes a claim at its new version (PrevVersion 0: a new claim)
// and appends its history record. For an existing claim the store also
// updates the state shown beside its assert message.
type ClaimChange struct {
	Claim       Claim
	PrevVersion int64
	Record      *ClaimRecord
}

// Idempotency remembers a post under a key: a pointer to what it stored,
// and the hash of the request, so that a retry with another request under
// the same key is refused rather than answered with the first.
type Idempotency struct {
	Key     string // already hashed with the token id
	Request string // hash of the decoded envelope
	Thread  int64
	Message int64
	Claim   int64
	Expires time.Time
}

// TokenQuery selects list_tokens' page: tokens whose id starts with
// Prefix ("" for all), in id order, after a token id.
type TokenQuery struct {
	Prefix string
	After  string
	Limit  int
}

// MessageQuery selects a page of one thread's messages.
type MessageQuery struct {
	Thread int64
	After  int64 // a message id of the thread; 0 from the root
	Limit  int
}

// ClaimQuery selects list_claims' page.
type ClaimQuery struct {
	Thread int64      // 0: every thread
	State  ClaimState // "": every state
	After  int64      // a claim id; 0 from the newest
	Limit  int
}

// ThreadQuery selects list_threads' page.
type ThreadQuery struct {
	State State // "" for every state
	After int64 // a thread id; 0 from the newest
	Limit int
}

// EventQuery selects an events page: of one thread after a sequence number
// (exact: a thread's events are chained by version), or of the whole
// instance after a store position (settled: see Store.Events).
type EventQuery struct {
	Thread   int64 // 0 for the whole instance
	AfterSeq int64
	After    string
	Limit    int
}

// AwaitingQuery selects inbox candidates: the partition of Identity, open
// calls, and with Human the calls for any human.
type AwaitingQuery struct {
	Identity string
	Human    bool
	After    string
	Limit    int
	Keep     func(Thread) bool
}

// QueueQuery selects a page of the review queue.
type QueueQuery struct {
	After string
	Limit int
}

// Store errors the service understands. Adapters wrap their own errors in these.
var (
	// ErrNotFound: the item does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost a race; re-read and retry.
	ErrConflict = errors.New("conflict")
	// ErrExists: an idempotency record (or token) with this key exists already.
	ErrExists = errors.New("exists")
	// ErrDuplicate: the commit's dedupe key exists already.
	ErrDuplicate = errors.New("duplicate")
	// ErrFull: a bounded count (a token's subscriptions) is at its bound.
	ErrFull = errors.New("full")
	// ErrPosition: a position the store did not issue.
	ErrPosition = errors.New("not a position of this store")
	// ErrUnavailable: storage is throttled, down or unreachable; nothing was
	// written and a retry later may succeed. Any other store error is a bug
	// (for example a request DynamoDB rejects as invalid) and is internal.
	ErrUnavailable = errors.New("storage unavailable")
)
