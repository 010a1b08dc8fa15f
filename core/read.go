package core

import (
	"context"
	"errors"
	"fmt"
)

// GetThread returns a thread with its message tree.
func (s *Service) GetThread(ctx context.Context, c Caller, id int64) (ThreadView, error) {
	if err := need(c, RightRead); err != nil {
		return ThreadView{}, err
	}
	th, msgs, err := s.store.ThreadMessages(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return ThreadView{}, refuse(ReasonThreadNotFound, "there is no thread %s", ThreadKey(id)).with("thread", ThreadKey(id))
	}
	if err != nil {
		return ThreadView{}, err
	}
	return ThreadView{ThreadSummary: viewSummary(th), Messages: tree(msgs, s.clock.Now())}, nil
}

// ListThreadsQuery is list_threads' input.
type ListThreadsQuery struct {
	State  string
	Cursor string
	Limit  int
}

// ListThreads pages through threads, newest first, optionally in one state.
func (s *Service) ListThreads(ctx context.Context, c Caller, q ListThreadsQuery) (ThreadPage, error) {
	if err := need(c, RightRead); err != nil {
		return ThreadPage{}, err
	}
	st := State(q.State)
	if q.State != "" && !st.Valid() {
		return ThreadPage{}, Invalid("state", "unknown state %q", q.State)
	}
	after, err := decodeCursor("cursor", "threads", q.Cursor)
	if err != nil {
		return ThreadPage{}, err
	}
	ths, next, err := s.store.Threads(ctx, ThreadQuery{State: st, After: after, Limit: s.page(q.Limit)})
	if err != nil {
		return ThreadPage{}, err
	}
	page := ThreadPage{Threads: make([]ThreadSummary, 0, len(ths)), Cursor: encodeCursor("threads", next)}
	for _, t := range ths {
		page.Threads = append(page.Threads, viewSummary(t))
	}
	return page, nil
}

// EventsQuery is events' input.
type EventsQuery struct {
	Thread int64 // 0: the whole instance
	Since  string
	Limit  int
}

// Events returns the state changes after a cursor, oldest first. The cursor
// always comes back, so a caller can poll with it for what is new.
func (s *Service) Events(ctx context.Context, c Caller, q EventsQuery) (EventPage, error) {
	if err := need(c, RightRead); err != nil {
		return EventPage{}, err
	}
	kind := "events"
	if q.Thread != 0 {
		kind = "tevents"
	}
	after, err := decodeCursor("since", kind, q.Since)
	if err != nil {
		return EventPage{}, err
	}
	if kind == "tevents" && after != "" && after[:12] != fmt.Sprintf("%012d", q.Thread) {
		return EventPage{}, Invalid("since", "since is a cursor of another thread")
	}
	evs, next, err := s.store.Events(ctx, EventQuery{Thread: q.Thread, After: after, Limit: s.page(q.Limit)})
	if err != nil {
		return EventPage{}, err
	}
	// Every thread has at least the event that opened it, so an empty first
	// page means there is no such thread — no separate read to find out. (A
	// since cursor for the thread was issued while it existed; threads are
	// never deleted.)
	if q.Thread != 0 && after == "" && len(evs) == 0 {
		return EventPage{}, refuse(ReasonThreadNotFound, "there is no thread %s", ThreadKey(q.Thread)).with("thread", ThreadKey(q.Thread))
	}
	if next == "" {
		next = after
	}
	page := EventPage{Events: make([]EventView, 0, len(evs)), Cursor: encodeCursor(kind, next)}
	for _, e := range evs {
		page.Events = append(page.Events, viewEvent(e))
	}
	return page, nil
}

// InboxQuery is inbox's input.
type InboxQuery struct {
	Extension *string // nil: every extension of the caller's identity
	Since     string
	Limit     int
}

// Inbox lists the threads whose awaiting names the caller (decisions §5):
// its identity (narrowed to one extension when given), open calls (any) that
// the caller's party did not open itself, and human calls for humans.
func (s *Service) Inbox(ctx context.Context, c Caller, q InboxQuery) (InboxPage, error) {
	if err := need(c, RightRead); err != nil {
		return InboxPage{}, err
	}
	self := Party{Identity: c.Identity}
	if q.Extension != nil {
		if *q.Extension != "" && !ValidHandle(*q.Extension) {
			return InboxPage{}, Invalid("extension", "extension must match ^[a-z0-9][a-z0-9_-]{0,31}$")
		}
		self.Extension = *q.Extension
	}
	after, err := decodeCursor("since", "inbox", q.Since)
	if err != nil {
		return InboxPage{}, err
	}
	keep := func(t Thread) bool {
		a := t.Awaiting
		switch a.Scope {
		case AwaitParty:
			return a.Party.Identity == c.Identity && (q.Extension == nil || a.Party.Extension == self.Extension)
		case AwaitAny:
			return a.Party != self // your own extension's calls are hidden
		case AwaitHuman:
			return c.Human()
		}
		return false
	}
	ths, next, err := s.store.Awaiting(ctx, AwaitingQuery{Identity: c.Identity, After: after, Limit: s.page(q.Limit), Keep: keep})
	if err != nil {
		return InboxPage{}, err
	}
	if next == "" {
		next = after
	}
	page := InboxPage{Threads: make([]ThreadSummary, 0, len(ths)), Cursor: encodeCursor("inbox", next)}
	for _, t := range ths {
		page.Threads = append(page.Threads, viewSummary(t))
	}
	return page, nil
}
