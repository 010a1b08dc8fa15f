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
	Root      Message
	Messages  int   // how many messages the thread holds
	Version   int64 // bumped by every write; conditional writes compare it

	State       State
	Origin      Origin
	ConfirmedAt *time.Time // nil while the state is a proposal
	Label       string     // "KI · <label>" when a lock holder set the state
	StateBy     string     // identity that set the state
	StateAt     time.Time

	Awaiting   Awaiting
	AwaitingAt time.Time // when awaiting was last set; orders the inbox
	// AwaitingVersion is the version that set awaiting: with AwaitingAt it
	// keys the inbox entry, which so moves only when awaiting is set.
	AwaitingVersion int64

	// Recent are the senders of the latest messages since the state last
	// changed, at most Limits.Exchange of them: the exchange limit's window.
	Recent []Party
}

func (t Thread) current() Current { return Current{State: t.State, Confirmed: t.ConfirmedAt != nil} }

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
