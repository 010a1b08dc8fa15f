package core

import "context"

// Mark sets a thread's state (decisions §4).
func (s *Service) Mark(ctx context.Context, c Caller, thread int64, target string) (ThreadState, error) {
	if err := need(c, RightWrite); err != nil {
		return ThreadState{}, err
	}
	to := State(target)
	if !to.Valid() {
		return ThreadState{}, Invalid("state", "state must be one of answered, decided, closed, deferred, obsolete, rejected")
	}
	if to == StateOpen && !c.Human() {
		return ThreadState{}, Invalid("state", "open is reached through reopen")
	}
	return s.change(ctx, c, thread, OpMark, to)
}

// Confirm confirms the thread's current proposal as it stands.
func (s *Service) Confirm(ctx context.Context, c Caller, thread int64) (ThreadState, error) {
	return s.change(ctx, c, thread, OpConfirm, "")
}

// Reopen sets a closed or side-state thread open again.
func (s *Service) Reopen(ctx context.Context, c Caller, thread int64) (ThreadState, error) {
	return s.change(ctx, c, thread, OpReopen, StateOpen)
}

// change runs one state operation as a conditional write with retries.
func (s *Service) change(ctx context.Context, c Caller, thread int64, op Op, to State) (ThreadState, error) {
	if err := need(c, RightWrite); err != nil {
		return ThreadState{}, err
	}
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
		if err := s.store.Commit(ctx, Commit{Thread: next, PrevVersion: th.Version, Event: ev}); err != nil {
			return err
		}
		res = viewState(next)
		return nil
	})
	return res, err
}
