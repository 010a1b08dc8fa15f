package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GetThreadInput is get_thread's input.
type GetThreadInput struct {
	Thread ThreadRef `json:"thread" in:"path" required:"true" doc:"the thread: th_N"`
	Cursor string    `json:"cursor" doc:"the cursor of the previous page, to continue"`
	Limit  PageLimit `json:"limit" doc:"messages per page, default 200, at most 500"`
}

// GetThread returns a thread's state and a page of its messages in order of
// creation, nested by parent within the page (docs/protocol.md §6.1). A page
// stops early when its messages would make the response too large to
// carry on either transport.
//
// Refusals: invalid_body, thread_not_found, unavailable.
func (s *Service) GetThread(ctx context.Context, c Caller, in GetThreadInput) (ThreadView, error) {
	q := struct {
		Thread int64
		Cursor string
		Limit  int
	}{int64(in.Thread), in.Cursor, int(in.Limit)}
	after, err := decodeIDCursor("cursor", "messages", q.Cursor)
	if err != nil {
		return ThreadView{}, err
	}
	if after != 0 {
		if th, _ := MessageParts(after); th != q.Thread {
			return ThreadView{}, Invalid("cursor", "cursor is a cursor of another thread")
		}
	}
	limit := pageSize(q.Limit, s.limits.ThreadPageDefault, s.limits.ThreadPageMax)
	th, msgs, more, err := s.store.Messages(ctx, MessageQuery{Thread: q.Thread, After: after, Limit: limit})
	if errors.Is(err, ErrNotFound) {
		return ThreadView{}, threadNotFound(q.Thread)
	}
	if err != nil {
		return ThreadView{}, err
	}
	// Keep the page within its share of the response limit: MCP carries a
	// result twice (structured and as text).
	// Each view is built once: measured here, then nested.
	budget, size, now := s.limits.ResponseBytes*2/5, 0, s.clock.Now()
	views := make(map[int64]*MessageView, len(msgs))
	for i, m := range msgs {
		mv := viewMessage(m, now)
		raw, err := json.Marshal(mv)
		if err != nil {
			return ThreadView{}, err
		}
		if size += len(raw); size > budget && i > 0 {
			msgs, more = msgs[:i], true
			break
		}
		views[m.ID] = mv
	}
	v := ThreadView{ThreadSummary: viewSummary(th), Messages: tree(msgs, views)}
	if more && len(msgs) > 0 {
		v.Cursor = nextCursor("messages", idPosition(msgs[len(msgs)-1].ID))
	}
	return v, nil
}

// pageSize applies a page's default and maximum; the input layer refuses
// limits below 1.
func pageSize(limit, def, max int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, max)
}

func (s *Service) page(limit int) int {
	return pageSize(limit, s.limits.PageDefault, s.limits.PageMax)
}

// ListThreadsInput is list_threads' input.
type ListThreadsInput struct {
	State  State     `json:"state" doc:"only threads in this state"`
	Cursor string    `json:"cursor" doc:"the cursor of the previous page, to continue"`
	Limit  PageLimit `json:"limit" doc:"page size, default 50, at most 200"`
}

// ListThreads pages through threads, newest first, optionally in one state.
//
// Refusals: invalid_body, unavailable.
func (s *Service) ListThreads(ctx context.Context, c Caller, in ListThreadsInput) (ThreadPage, error) {
	q := struct {
		Cursor string
		Limit  int
	}{in.Cursor, int(in.Limit)}
	st := in.State
	if st != "" && !st.Valid() {
		return ThreadPage{}, Invalid("state", "unknown state %q", st)
	}
	after, err := decodeIDCursor("cursor", "threads", q.Cursor)
	if err != nil {
		return ThreadPage{}, err
	}
	ths, next, err := s.store.Threads(ctx, ThreadQuery{State: st, After: after, Limit: s.page(q.Limit)})
	if err != nil {
		return ThreadPage{}, err
	}
	page := ThreadPage{Threads: make([]ThreadSummary, 0, len(ths)), Cursor: nextCursor("threads", idPosition(next))}
	for _, t := range ths {
		page.Threads = append(page.Threads, viewSummary(t))
	}
	return page, nil
}

// EventsInput is events' input.
type EventsInput struct {
	Thread ThreadRef `json:"thread" doc:"only this thread's events; omit for the whole instance"`
	Since  string    `json:"since" doc:"the cursor of an earlier reply: only newer events come back"`
	Limit  PageLimit `json:"limit" doc:"page size, default 50, at most 200"`
}

// Events returns the state changes after a cursor, oldest first. The cursor
// always comes back, so a caller can poll with it for what is new. A
// thread's events are exact; the instance's feed may repeat an event within
// the settle window (docs/protocol.md §6.3) — (thread, seq) identifies it.
//
// Refusals: invalid_body, thread_not_found, unavailable.
func (s *Service) Events(ctx context.Context, c Caller, in EventsInput) (EventPage, error) {
	q := struct {
		Thread int64
		Since  string
		Limit  int
	}{int64(in.Thread), in.Since, int(in.Limit)}
	var evs []Event
	var cursor string
	if q.Thread != 0 {
		pos, err := decodeCursor("since", "tevents", q.Since)
		if err != nil {
			return EventPage{}, err
		}
		var seq int64
		if pos != "" {
			th, sq, ok := strings.Cut(pos, ":")
			n, err := strconv.ParseInt(sq, 10, 64)
			if !ok || th != strconv.FormatInt(q.Thread, 10) || err != nil || n < 0 {
				return EventPage{}, Invalid("since", "since is a cursor of another thread")
			}
			seq = n
		}
		evs, _, err = s.store.Events(ctx, EventQuery{Thread: q.Thread, AfterSeq: seq, Limit: s.page(q.Limit)})
		if err != nil {
			return EventPage{}, err
		}
		// Every thread has at least the event that opened it, so an empty
		// first page means there is no such thread — no separate read to find
		// out. (Threads are never deleted.)
		if seq == 0 && len(evs) == 0 {
			return EventPage{}, threadNotFound(q.Thread)
		}
		if len(evs) > 0 {
			seq = evs[len(evs)-1].Seq
		}
		cursor = encodeCursor("tevents", fmt.Sprintf("%d:%d", q.Thread, seq))
	} else {
		after, err := decodeCursor("since", "events", q.Since)
		if err != nil {
			return EventPage{}, err
		}
		var next string
		evs, next, err = s.store.Events(ctx, EventQuery{After: after, Limit: s.page(q.Limit)})
		if err != nil {
			return EventPage{}, positionError("since", err)
		}
		cursor = encodeCursor("events", next)
	}
	page := EventPage{Events: make([]EventView, 0, len(evs)), Cursor: cursor}
	for _, e := range evs {
		page.Events = append(page.Events, viewEvent(e))
	}
	return page, nil
}

// InboxInput is inbox's input.
type InboxInput struct {
	Extension *string   `json:"extension" doc:"narrow to this extension of your identity (\"\" is the default one); also hides open calls you opened with it"`
	Since     string    `json:"since" doc:"the cursor of an earlier reply: only turns that came since"`
	Limit     PageLimit `json:"limit" doc:"page size, default 50, at most 200"`
}

// Inbox lists the threads whose awaiting names the caller (docs/protocol.md
// §6.3): its identity (narrowed to one extension when given), open calls
// (any) that the caller's party did not open itself, and for humans the
// calls for any human. Oldest call first; each call reads a bounded amount
// and returns a cursor to poll with, even when its page is short. A thread
// may come again within the settle window; its (id, awaiting_version)
// identifies the turn.
//
// Refusals: invalid_body, unavailable.
func (s *Service) Inbox(ctx context.Context, c Caller, in InboxInput) (InboxPage, error) {
	q := struct {
		Extension *string
		Since     string
		Limit     int
	}{in.Extension, in.Since, int(in.Limit)}
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
		if a := t.Awaiting; a.Scope == AwaitParty && q.Extension == nil {
			return a.Party.Identity == c.Identity // every extension of yours
		}
		return t.Awaiting.names(self) // an open call of your own party is hidden
	}
	ths, next, err := s.store.Awaiting(ctx, AwaitingQuery{Identity: c.Identity, Human: c.Human(), After: after, Limit: s.page(q.Limit), Keep: keep})
	if err != nil {
		return InboxPage{}, positionError("since", err)
	}
	page := InboxPage{Threads: make([]ThreadSummary, 0, len(ths)), Cursor: encodeCursor("inbox", next)}
	for _, t := range ths {
		page.Threads = append(page.Threads, viewSummary(t))
	}
	return page, nil
}
