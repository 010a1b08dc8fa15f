package core

import "context"

// MarkInput is mark's input.
type MarkInput struct {
	Thread ThreadRef `json:"thread" in:"path" required:"true" doc:"the thread: th_N"`
	State  State     `json:"state" required:"true" doc:"the target state: answered, decided, closed, deferred, obsolete or rejected (open only for humans; others use reopen)"`
}

// Mark sets a thread's state (docs/protocol.md §5, §5.4).
//
// Refusals: invalid_body, thread_not_found, thread_authority_missing,
// invalid_transition, thread_closed, unavailable.
func (s *Service) Mark(ctx context.Context, c Caller, in MarkInput) (ThreadState, error) {
	if !in.State.Valid() {
		return ThreadState{}, Invalid("state", "state must be one of answered, decided, closed, deferred, obsolete, rejected")
	}
	if in.State == StateOpen && !c.Human() {
		return ThreadState{}, Invalid("state", "open is reached through reopen")
	}
	return s.change(ctx, c, int64(in.Thread), OpMark, in.State)
}

// ConfirmInput is confirm's input: the state the moderator saw.
type ConfirmInput struct {
	Thread ThreadRef `json:"thread" in:"path" required:"true" doc:"the thread: th_N"`
	State  State     `json:"state" required:"true" doc:"the proposed state you saw and confirm; if the proposal changed meanwhile nothing is confirmed"`
}

// Confirm confirms the thread's current proposal, if it is the state the
// moderator saw (docs/protocol.md §5.4).
//
// Refusals: invalid_body, thread_not_found, thread_authority_missing,
// invalid_transition, thread_closed, unavailable.
func (s *Service) Confirm(ctx context.Context, c Caller, in ConfirmInput) (ThreadState, error) {
	if !in.State.Valid() {
		return ThreadState{}, Invalid("state", "state must name a state")
	}
	return s.change(ctx, c, int64(in.Thread), OpConfirm, in.State)
}

// ReopenInput is reopen's input.
type ReopenInput struct {
	Thread ThreadRef `json:"thread" in:"path" required:"true" doc:"the thread: th_N"`
}

// Reopen sets a closed or side-state thread open again.
//
// Refusals: invalid_body, thread_not_found, thread_authority_missing,
// invalid_transition, unavailable.
func (s *Service) Reopen(ctx context.Context, c Caller, in ReopenInput) (ThreadState, error) {
	return s.change(ctx, c, int64(in.Thread), OpReopen, StateOpen)
}

// change runs one state operation as a conditional write with retries.
func (s *Service) change(ctx context.Context, c Caller, thread int64, op Op, to State) (ThreadState, error) {
	var res ThreadState
	err := s.retry(ctx, func(current *Thread) error {
		var th Thread
		if current != nil {
			th = *current
		} else {
			var err error
			if th, err = s.loadThread(ctx, thread); err != nil {
				return err
			}
		}
		out, err := Decide(RoleOf(c, th.Creator.Identity), th.current(), op, to)
		if err != nil {
			return err
		}
		now := s.clock.Now().UTC()
		next := th
		next.Version++
		next.UpdatedAt = now
		// After a confirm the state fields carry the confirmer; the proposer
		// stays visible in the event history.
		ev := s.apply(&next, c, out, string(op), now)
		next.Recent = nil // the state moved: the exchange window restarts
		next.queue(th)
		if err := s.commit(ctx, &th, Commit{Thread: next, PrevVersion: th.Version, Event: ev}); err != nil {
			return err
		}
		res = viewState(next)
		return nil
	})
	return res, err
}
