package core

import "context"

// QueueInput is queue's input.
type QueueInput struct {
	Cursor string    `json:"cursor" doc:"the cursor of the previous page, to continue"`
	Limit  PageLimit `json:"limit" doc:"page size, default 50, at most 200"`
}

// QueueEntry is one thread that needs a moderator: why, its state fields,
// and the message to look at (the escalation, or the act that proposed the
// state; null when an operation did).
type QueueEntry struct {
	ThreadSummary
	Why     string       `json:"why" enum:"escalated,proposal"`
	Message *MessageView `json:"message"`
}

// QueuePage is a page of the review queue; Cursor continues it, null at the end.
type QueuePage struct {
	Threads []QueueEntry `json:"threads"`
	Cursor  *string      `json:"cursor"`
}

// Queue is the review queue (docs/protocol.md §6.4): threads awaiting a human and
// threads whose state is an unconfirmed proposal, oldest first, each with
// the message that caused it. One index page and two batch reads a call.
//
// Refusals: token_right_missing, invalid_body, unavailable.
func (s *Service) Queue(ctx context.Context, c Caller, in QueueInput) (QueuePage, error) {
	after, err := decodeCursor("cursor", "queue", in.Cursor)
	if err != nil {
		return QueuePage{}, err
	}
	ths, next, err := s.store.Queue(ctx, QueueQuery{After: after, Limit: s.page(int(in.Limit))})
	if err != nil {
		return QueuePage{}, positionError("cursor", err)
	}
	var ids []int64
	for _, t := range ths {
		if id := t.cause(); id != 0 {
			ids = append(ids, id)
		}
	}
	msgs, err := s.store.MessagesByID(ctx, ids)
	if err != nil {
		return QueuePage{}, err
	}
	byID := map[int64]Message{}
	for _, m := range msgs {
		byID[m.ID] = m
	}
	now := s.clock.Now()
	page := QueuePage{Threads: make([]QueueEntry, 0, len(ths)), Cursor: nextCursor("queue", next)}
	for _, t := range ths {
		e := QueueEntry{ThreadSummary: viewSummary(t), Why: t.Why()}
		if m, ok := byID[t.cause()]; ok {
			e.Message = viewMessage(m, now)
		}
		page.Threads = append(page.Threads, e)
	}
	return page, nil
}

// cause is the message a moderator should look at: the one that escalated,
// or the one whose act proposed the state.
func (t Thread) cause() int64 {
	if t.Why() == WhyEscalated {
		return t.AwaitingMsg
	}
	return t.StateMsg
}
