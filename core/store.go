package core

import (
	"context"
	"time"
)

// Store is what the service needs from storage. The one implementation is
// DynamoDB (infra/dynamo); every write that depends on what was read is
// conditional, so a concurrent request cannot slip between read and write.
type Store interface {
	// Token returns the token stored under the SHA-256 hex of its secret.
	Token(ctx context.Context, hash string) (Token, error)
	PutToken(ctx context.Context, t Token) error
	Tokens(ctx context.Context) ([]Token, error)
	// RevokeToken marks the token stored under hash revoked; it must exist.
	RevokeToken(ctx context.Context, hash string, at time.Time) error

	// NextIDs reserves the next n numbers of a sequence ("thread",
	// "message", "claim") and returns the last of them.
	NextIDs(ctx context.Context, seq string, n int64) (int64, error)

	Thread(ctx context.Context, id int64) (Thread, error)
	// ThreadAndMessage reads a thread and one of its messages in one round
	// trip; a message that is not in that thread comes back with ID 0.
	ThreadAndMessage(ctx context.Context, thread, msg int64) (Thread, Message, error)
	// MessageThread says which thread holds a message.
	MessageThread(ctx context.Context, msg int64) (int64, error)
	// ThreadMessages reads a thread with all its messages, ordered by id.
	ThreadMessages(ctx context.Context, id int64) (Thread, []Message, error)

	// Commit writes one change atomically, or nothing. It fails with
	// ErrConflict when the thread is no longer at c.PrevVersion, and with
	// ErrExists when the idempotency key has been used.
	Commit(ctx context.Context, c Commit) error
	// Idempotent returns the result stored under an idempotency key.
	Idempotent(ctx context.Context, key string) ([]byte, error)

	// Threads lists threads newest first, optionally in one state, after a position.
	Threads(ctx context.Context, q ThreadQuery) ([]Thread, string, error)
	// Events lists events oldest first, of one thread or of all, after a position.
	Events(ctx context.Context, q EventQuery) ([]Event, string, error)
	// Awaiting lists threads whose awaiting is set for an identity (scope
	// party) or broadly (scopes any and human), oldest call first, after a
	// position. Keep filters what the caller may see; the store reads on
	// until Limit threads are kept or the index is exhausted.
	Awaiting(ctx context.Context, q AwaitingQuery) ([]Thread, string, error)

	// ReserveRate adds n posts to a per-token, per-window counter if the
	// total stays within limit, and reports whether it did. The counter
	// item expires at expires.
	ReserveRate(ctx context.Context, key string, n, limit int, expires time.Time) (bool, error)

	// Claim reads one claim item, strongly consistent.
	Claim(ctx context.Context, id int64) (Claim, error)
	// ClaimHistory reads a claim with its records, oldest first.
	ClaimHistory(ctx context.Context, id int64) (Claim, []ClaimRecord, error)
	// Claims lists claims newest first, by thread and/or state, after a position.
	Claims(ctx context.Context, q ClaimQuery) ([]Claim, string, error)
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
}

// ClaimChange writes a claim at its new version (PrevVersion 0: a new claim)
// and appends its history record. For an existing claim the store also
// updates the state shown beside its assert message.
type ClaimChange struct {
	Claim       Claim
	PrevVersion int64
	Record      *ClaimRecord
}

// ClaimQuery selects list_claims' page.
type ClaimQuery struct {
	Thread int64      // 0: every thread
	State  ClaimState // "": every state
	After  string
	Limit  int
}

// Idempotency stores a post's result under a key for a while.
type Idempotency struct {
	Key     string // already hashed with the token id
	Result  []byte
	Expires time.Time
}

// ThreadQuery selects list_threads' page.
type ThreadQuery struct {
	State State  // "" for every state
	After string // store position; "" from the newest
	Limit int
}

// EventQuery selects an events page.
type EventQuery struct {
	Thread int64  // 0 for the whole instance
	After  string // store position; "" from the first
	Limit  int
}

// AwaitingQuery selects inbox candidates. The store reads the party
// partition of Identity and the broad one, merges them in order, and keeps
// what Keep accepts.
type AwaitingQuery struct {
	Identity string
	After    string
	Limit    int
	Keep     func(Thread) bool
}
