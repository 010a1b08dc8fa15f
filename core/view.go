package core

import (
	"cmp"
	"slices"
	"time"
)

// The JSON shapes both transports return. Field names follow the seed.

// AwaitingView is who is due: {"scope":"party","identity","extension"},
// {"scope":"any","except":{…}}, {"scope":"human"}; null when nobody is.
type AwaitingView struct {
	Scope     AwaitScope `json:"scope"`
	Identity  string     `json:"identity,omitempty"`
	Extension *string    `json:"extension,omitempty"`
	Except    *Party     `json:"except,omitempty"`
}

func viewAwaiting(a Awaiting) *AwaitingView {
	switch a.Scope {
	case AwaitParty:
		ext := a.Party.Extension
		return &AwaitingView{Scope: a.Scope, Identity: a.Party.Identity, Extension: &ext}
	case AwaitAny:
		p := a.Party
		return &AwaitingView{Scope: a.Scope, Except: &p}
	case AwaitHuman:
		return &AwaitingView{Scope: a.Scope}
	}
	return nil
}

// ThreadState is a thread's state fields: what post, mark, confirm and reopen return.
type ThreadState struct {
	ID               string     `json:"id"`
	State            State      `json:"state"`
	StateOrigin      Origin     `json:"state_origin"`
	StateConfirmedAt *time.Time `json:"state_confirmed_at"`
	// StateConfirmedBy says who confirmed the state — "lock" (a lock
	// holder) or "human" — and so who may change it; null for a proposal
	// or a state no authority confirmed (a thread's first open).
	StateConfirmedBy *Confirmer    `json:"state_confirmed_by"`
	StateLabel       string        `json:"state_label,omitempty"`
	StateBy          string        `json:"state_by"`
	Proposal         bool          `json:"proposal"`
	Awaiting         *AwaitingView `json:"awaiting"`
	// AwaitingVersion is the version that last set awaiting: with the id it
	// names one turn, so a reader can drop an inbox entry seen twice.
	AwaitingVersion int64     `json:"awaiting_version"`
	Version         int64     `json:"version"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func confirmedBy(t Thread) *Confirmer {
	if t.ConfirmedAt == nil || t.ConfirmedBy == ByNone {
		return nil
	}
	by := t.ConfirmedBy
	return &by
}

func viewState(t Thread) ThreadState {
	return ThreadState{
		ID: ThreadKey(t.ID), State: t.State, StateOrigin: t.Origin,
		StateConfirmedAt: t.ConfirmedAt, StateConfirmedBy: confirmedBy(t), StateLabel: t.Label, StateBy: t.StateBy,
		Proposal: t.ConfirmedAt == nil, Awaiting: viewAwaiting(t.Awaiting), AwaitingVersion: t.AwaitingVersion,
		Version: t.Version, UpdatedAt: t.UpdatedAt,
	}
}

// ThreadSummary is a thread without its messages (list_threads, inbox).
type ThreadSummary struct {
	ThreadState
	Title        string    `json:"title"`
	Creator      Party     `json:"creator"`
	CreatedAt    time.Time `json:"created_at"`
	MessageCount int       `json:"message_count"`
}

func viewSummary(t Thread) ThreadSummary {
	return ThreadSummary{ThreadState: viewState(t), Title: t.Title, Creator: t.Creator, CreatedAt: t.CreatedAt, MessageCount: t.Messages}
}

// MessageView is a stored message as returned to clients; Replies nests the tree.
type MessageView struct {
	ID         string      `json:"id"`
	Kind       Kind        `json:"kind"`
	Thread     string      `json:"thread"`
	Parent     *string     `json:"parent"`
	From       Party       `json:"from"`
	AuthorKind string      `json:"author_kind"`
	Body       string      `json:"body"`
	Provenance *Provenance `json:"provenance,omitempty"`
	CreatedAt  time.Time   `json:"created_at"`
	Depth      int         `json:"depth"`
	// Dialectic messages only.
	Claim      *MessageClaim  `json:"claim,omitempty"`
	Evidence   []Evidence     `json:"evidence,omitempty"`
	Supersedes []string       `json:"supersedes,omitempty"`
	Replies    []*MessageView `json:"replies,omitempty"`
}

// MessageClaim is the claim a dialectic message made or acted on; beside an
// assert it carries the claim's current state.
type MessageClaim struct {
	ID         string     `json:"id"`
	State      ClaimState `json:"state,omitempty"`
	ValidUntil *time.Time `json:"valid_until,omitempty"`
	Expired    bool       `json:"expired,omitempty"`
}

func viewMessage(m Message, now time.Time) *MessageView {
	v := &MessageView{
		ID: MessageKey(m.ID), Kind: m.Kind, Thread: ThreadKey(m.Thread), From: m.From,
		AuthorKind: m.AuthorKind, Body: m.Body, Provenance: m.Provenance, CreatedAt: m.CreatedAt, Depth: m.Depth,
		Evidence: m.Evidence,
	}
	if m.Claim != 0 {
		v.Claim = &MessageClaim{ID: ClaimKey(m.Claim)}
		if m.Kind == KindAssert {
			v.Claim.State, v.Claim.ValidUntil, v.Claim.Expired = m.ClaimState, m.ClaimValidUntil, expired(m.ClaimValidUntil, now)
		}
	}
	for _, id := range m.Supersedes {
		v.Supersedes = append(v.Supersedes, ClaimKey(id))
	}
	if m.Parent != 0 {
		p := MessageKey(m.Parent)
		v.Parent = &p
	}
	return v
}

// ThreadView is get_thread's answer: the summary and a page of the message
// tree; Cursor continues it, null at the end.
type ThreadView struct {
	ThreadSummary
	Messages []*MessageView `json:"messages"`
	Cursor   *string        `json:"cursor"`
}

// tree nests messages by parent, given their views by id; siblings keep
// the order of creation (time, then id). A message whose parent is
// missing is shown at the top level.
func tree(msgs []Message, byID map[int64]*MessageView) []*MessageView {
	msgs = slices.Clone(msgs)
	slices.SortStableFunc(msgs, func(a, b Message) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	roots := []*MessageView{}
	for _, m := range msgs {
		v := byID[m.ID]
		if p, ok := byID[m.Parent]; ok && m.Parent != 0 {
			p.Replies = append(p.Replies, v)
		} else {
			roots = append(roots, v)
		}
	}
	return roots
}

// PostResult is what post returns: the stored message and the thread after it.
type PostResult struct {
	Message *MessageView `json:"message"`
	Thread  ThreadState  `json:"thread"`
	// Claim is the claim after a dialectic act (assert, attest, refute, verify).
	Claim *ClaimView `json:"claim,omitempty"`
	// Replayed is true when an idempotency key returned an earlier result.
	Replayed bool `json:"replayed,omitempty"`
}

// WasReplayed reports whether the result repeats an earlier post.
func (r PostResult) WasReplayed() bool { return r.Replayed }

// EventView is one state change.
type EventView struct {
	Thread    string    `json:"thread"`
	Seq       int64     `json:"seq"`
	From      *State    `json:"from"`
	To        State     `json:"to"`
	Origin    Origin    `json:"origin"`
	Actor     string    `json:"actor"`
	Label     string    `json:"label,omitempty"`
	At        time.Time `json:"at"`
	Confirmed bool      `json:"confirmed"`
	Cause     string    `json:"cause"`
}

func viewEvent(e Event) EventView {
	v := EventView{Thread: ThreadKey(e.Thread), Seq: e.Seq, To: e.To, Origin: e.Origin, Actor: e.Actor, Label: e.Label, At: e.At, Confirmed: e.Confirmed, Cause: e.Cause}
	if e.From != "" {
		f := e.From
		v.From = &f
	}
	return v
}

// ThreadPage is a page of threads; Cursor continues it, null at the end.
type ThreadPage struct {
	Threads []ThreadSummary `json:"threads"`
	Cursor  *string         `json:"cursor"`
}

// EventPage is a page of events. Cursor is always given: poll with it as
// since for what is new.
type EventPage struct {
	Events []EventView `json:"events"`
	Cursor string      `json:"cursor"`
}

// InboxPage is a page of threads awaiting the caller. Cursor is always
// given: poll with it as since for new turns.
type InboxPage struct {
	Threads []ThreadSummary `json:"threads"`
	Cursor  string          `json:"cursor"`
}

// Whoami describes the caller's token.
type Whoami struct {
	Identity   string  `json:"identity"`
	AuthorKind string  `json:"author_kind"`
	Rights     []Right `json:"rights"`
	Label      string  `json:"label,omitempty"`
	TokenID    string  `json:"token_id"`
}

// The views as both transports and the push deliveries show them.

// ViewSummary is a thread as list_threads and the inbox show it.
func ViewSummary(t Thread) ThreadSummary { return viewSummary(t) }

// ViewMessage is a message as get_thread shows it (without replies).
func ViewMessage(m Message, now time.Time) *MessageView { return viewMessage(m, now) }

// ViewEvent is an event as the events feed shows it.
func ViewEvent(e Event) EventView { return viewEvent(e) }
