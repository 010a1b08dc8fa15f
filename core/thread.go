package core

import (
	"time"
	"unicode/utf8"
)

// Thread is a conversation: a tree of messages with one state and one awaiting.
type Thread struct {
	ID        int64
	Creator   Party
	CreatedAt time.Time
	UpdatedAt time.Time
	Title     string // the root message's body, shortened
	RootKind  Kind   // the act of the thread's first message
	Messages  int    // how many messages the thread holds
	Version   int64  // bumped by every write; conditional writes compare it

	State       State
	Origin      Origin
	ConfirmedAt *time.Time // nil while the state is a proposal
	ConfirmedBy Confirmer  // who confirmed it: what it takes to change it
	Label       string     // "KI · <label>" when a lock holder set the state
	StateBy     string     // identity that set the state
	StateAt     time.Time
	StateMsg    int64 // the message whose act set the state; 0 when an operation did

	Awaiting Awaiting
	// AwaitingVersion is the version that last set awaiting; the inbox entry
	// moves only then. AwaitingAt is when that commit was stamped (by the
	// store, just before the write) and orders the inbox.
	AwaitingVersion int64
	AwaitingAt      time.Time
	AwaitingMsg     int64 // the message that last set awaiting

	// QueueVersion is the version that put the thread in the review queue
	// (0: not in it); QueuedAt, stamped by the store, orders the queue.
	QueueVersion int64
	QueuedAt     time.Time

	// Recent are the identities that sent the latest messages since the
	// state last changed, at most Limits.Exchange of them: the window of the
	// exchange and run limits, which count identities, not extensions.
	Recent []string
}

func (t Thread) current() Current {
	return Current{State: t.State, Confirmed: t.ConfirmedAt != nil, By: t.ConfirmedBy}
}

// root is the thread's first message as a reply's parent: its author is the
// creator, and an ask root is its own asker.
func (t Thread) root() Message {
	m := Message{ID: MessageID(t.ID, 1), Thread: t.ID, Kind: t.RootKind, From: t.Creator, Depth: 1}
	if t.RootKind == KindAsk {
		m.Asker = t.Creator
	}
	return m
}

// Why the review queue holds a thread (docs/protocol.md §6.4).
const (
	WhyEscalated = "escalated" // awaiting a human
	WhyProposal  = "proposal"  // its state is an unconfirmed proposal
)

// Why says why the thread needs a moderator, or "" when it does not.
func (t Thread) Why() string {
	switch {
	case t.Awaiting.Scope == AwaitHuman:
		return WhyEscalated
	case t.ConfirmedAt == nil:
		return WhyProposal
	}
	return ""
}

// queue keeps QueueVersion true after a change from prev: a thread enters
// the queue at the version that made it need a moderator and stays at that
// place until it no longer does.
func (t *Thread) queue(prev Thread) {
	switch {
	case t.Why() == "":
		t.QueueVersion, t.QueuedAt = 0, time.Time{}
	case prev.QueueVersion == 0:
		t.QueueVersion, t.QueuedAt = t.Version, time.Time{}
	}
}

// Message ids carry their thread: id = thread × 10⁴ + the message's ordinal
// in the thread (1 for the root). A message is found from its id alone, a
// parent in another thread is known without a read, and a thread's messages
// are in creation order — the ordinal is taken under the thread's version.
const (
	// MaxThreadMessages bounds the messages-per-thread limit.
	MaxThreadMessages = 9999
	messageBase       = 10000
)

// MessageID is the id of a thread's n-th message.
func MessageID(thread int64, ordinal int) int64 { return thread*messageBase + int64(ordinal) }

// MessageParts splits a message id into its thread and ordinal.
func MessageParts(id int64) (thread int64, ordinal int) {
	return id / messageBase, int(id % messageBase)
}

// Locked reports whether the thread is closed and confirmed: no message, no mark.
func (t Thread) Locked() bool { return t.State == StateClosed && t.ConfirmedAt != nil }

// Message is one stored envelope with its server-set fields.
type Message struct {
	ID         int64
	Thread     int64
	Parent     int64 // 0 for the root
	Kind       Kind
	From       Party
	AuthorKind string
	Body       string
	Provenance *Provenance
	CreatedAt  time.Time
	Depth      int   // root = 1
	Asker      Party // author of the nearest ask at or above this message; zero if none

	// Dialectic messages: the claim created (assert) or acted on, with the
	// assert's current claim state kept beside it so a thread read shows it.
	Claim           int64
	ClaimState      ClaimState
	ClaimValidUntil *time.Time
	Evidence        []Evidence
	Supersedes      []int64
}

// Event records one change of state, confirmation included. Events are never
// rewritten; Seq is the thread's version after the change.
type Event struct {
	Thread    int64
	Seq       int64
	From      State // "" for the event that opens the thread
	To        State
	Origin    Origin
	Actor     string
	Label     string
	At        time.Time
	Confirmed bool
	Cause     string // a message key, or the operation
}

const titleRunes = 120

func titleOf(body string) string {
	if utf8.RuneCountInString(body) <= titleRunes {
		return body
	}
	r := []rune(body)
	return string(r[:titleRunes-1]) + "…"
}
