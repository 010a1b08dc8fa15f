package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
	"unicode"
)

// Post stores one envelope, given as the client's JSON (decisions §2–§4): it
// checks rights first, then the envelope, loop protection, limits and the
// mark the act carries, then writes the message, the thread, the event and
// the idempotency record in one conditional transaction, retrying when a
// concurrent write got there first.
func (s *Service) Post(ctx context.Context, c Caller, envelope []byte, idemKey string) (PostResult, error) {
	if err := need(c, RightWrite); err != nil {
		return PostResult{}, err
	}
	env, err := DecodeEnvelope(envelope, s.limits)
	if err != nil {
		return PostResult{}, err
	}
	var idem *Idempotency
	if idemKey != "" {
		if len(idemKey) > s.limits.IdempotencyKey || !printable(idemKey) {
			return PostResult{}, Invalid("idempotency_key", "the idempotency key must be 1 to %d printable characters", s.limits.IdempotencyKey)
		}
		sum := sha256.Sum256([]byte(c.TokenID + "\x00" + idemKey))
		idem = &Idempotency{Key: hex.EncodeToString(sum[:])}
		if res, ok, err := s.replay(ctx, idem.Key); err != nil || ok {
			return res, err
		}
	}

	msgID, err := s.store.NextID(ctx, "message")
	if err != nil {
		return PostResult{}, err
	}
	var res PostResult
	if env.Thread == 0 {
		res, err = s.open(ctx, c, env, msgID, idem)
	} else {
		err = s.retry(ctx, func() error {
			var e error
			res, e = s.reply(ctx, c, env, msgID, idem)
			return e
		})
	}
	if errors.Is(err, ErrExists) { // a concurrent retry with the same key won
		if res, ok, err := s.replay(ctx, idem.Key); err != nil || ok {
			return res, err
		}
		return PostResult{}, Unavailable(time.Second)
	}
	return res, err
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func (s *Service) replay(ctx context.Context, key string) (PostResult, bool, error) {
	raw, err := s.store.Idempotent(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return PostResult{}, false, nil
	}
	if err != nil {
		return PostResult{}, false, err
	}
	var res PostResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return PostResult{}, false, err
	}
	res.Replayed = true
	return res, true, nil
}

// open handles an ask without thread: a new thread whose root it is.
func (s *Service) open(ctx context.Context, c Caller, env Envelope, msgID int64, idem *Idempotency) (PostResult, error) {
	thID, err := s.store.NextID(ctx, "thread")
	if err != nil {
		return PostResult{}, err
	}
	now := s.clock.Now().UTC()
	sender := Party{Identity: c.Identity, Extension: env.Extension}
	msg := Message{
		ID: msgID, Thread: thID, Kind: env.Kind, From: sender, AuthorKind: c.AuthorKind(),
		Body: env.Body, Provenance: env.Provenance, CreatedAt: now, Depth: 1, Asker: sender,
	}
	origin := originOf(c)
	th := Thread{
		ID: thID, Creator: sender, CreatedAt: now, UpdatedAt: now, Title: titleOf(env.Body),
		Root: msg, Messages: 1, Version: 1,
		// Opening is not a contested mark, so the first open is confirmed.
		State: StateOpen, Origin: origin, ConfirmedAt: &now, Label: labelOf(c), StateBy: c.Identity, StateAt: now,
		Awaiting:   awaitingAfter(Awaiting{}, env.Kind, sender, Party{}, Party{}, sender, true),
		AwaitingAt: now,
	}
	ev := &Event{Thread: thID, Seq: 1, To: StateOpen, Origin: origin, Actor: c.Identity, Label: th.Label, At: now, Confirmed: true, Cause: MessageKey(msgID)}
	return s.commitPost(ctx, Commit{Thread: th, Message: &msg, Event: ev}, idem)
}

// reply handles a message into an existing thread. It is one attempt: a
// lost race returns ErrConflict and the caller runs it again on fresh reads.
func (s *Service) reply(ctx context.Context, c Caller, env Envelope, msgID int64, idem *Idempotency) (PostResult, error) {
	th, parent, err := s.readParent(ctx, env.Thread, env.Parent)
	if err != nil {
		return PostResult{}, err
	}
	if th.Locked() {
		return PostResult{}, refuse(ReasonThreadClosed, "the thread is closed and confirmed; it accepts no message until reopened").with("thread", ThreadKey(th.ID))
	}
	sender := Party{Identity: c.Identity, Extension: env.Extension}
	if parent.From == sender {
		return PostResult{}, refuse(ReasonSelfReply, "the same (identity, extension) cannot reply to its own message").with("parent", MessageKey(parent.ID))
	}
	if parent.Depth+1 > s.limits.Depth {
		return PostResult{}, refuse(ReasonLimitExceeded, "the thread may be at most %d messages deep", s.limits.Depth).with("limit", "depth").with("value", s.limits.Depth)
	}
	if th.Messages >= s.limits.ThreadMessages {
		return PostResult{}, refuse(ReasonLimitExceeded, "the thread holds its limit of %d messages", s.limits.ThreadMessages).with("limit", "messages").with("value", s.limits.ThreadMessages)
	}

	var out Outcome
	switch env.Kind {
	case KindAnswer:
		out, err = Decide(RoleOf(c, th.Creator.Identity), th.current(), OpAnswer, StateAnswered)
	case KindDecide:
		out, err = Decide(RoleOf(c, th.Creator.Identity), th.current(), OpDecide, StateDecided)
	}
	if err != nil {
		return PostResult{}, err
	}

	now := s.clock.Now().UTC()
	asker := parent.Asker
	if env.Kind == KindAsk {
		asker = sender
	}
	msg := Message{
		ID: msgID, Thread: th.ID, Parent: parent.ID, Kind: env.Kind, From: sender, AuthorKind: c.AuthorKind(),
		Body: env.Body, Provenance: env.Provenance, CreatedAt: now, Depth: parent.Depth + 1, Asker: asker,
	}
	askAuthor := parent.Asker
	if askAuthor == (Party{}) {
		askAuthor = parent.From // no ask above: the answer goes to whom it replies to
	}
	next := th
	next.Version++
	next.Messages++
	next.UpdatedAt = now
	aw := awaitingAfter(th.Awaiting, env.Kind, sender, parent.From, askAuthor, th.Creator, false)
	if aw != th.Awaiting || expectsReply(env.Kind) {
		next.AwaitingAt = now
	}
	next.Awaiting = aw
	var ev *Event
	if out.Change {
		ev = s.apply(&next, c, out, MessageKey(msgID), now)
	}
	return s.commitPost(ctx, Commit{Thread: next, PrevVersion: th.Version, Message: &msg, Event: ev}, idem)
}

// expectsReply reports whether the act sets awaiting anew (decisions §3).
func expectsReply(k Kind) bool {
	switch k {
	case KindAsk, KindAnswer, KindClarify, KindPropose, KindObject, KindEscalate:
		return true
	}
	return false
}

// readParent reads the thread and the effective parent: the given one, or
// the root. A parent elsewhere is invalid_body; one nowhere is message_not_found.
func (s *Service) readParent(ctx context.Context, thread, parent int64) (Thread, Message, error) {
	if parent == 0 {
		th, err := s.loadThread(ctx, thread)
		return th, th.Root, err
	}
	th, msg, err := s.store.ThreadAndMessage(ctx, thread, parent)
	if errors.Is(err, ErrNotFound) {
		return th, msg, refuse(ReasonThreadNotFound, "there is no thread %s", ThreadKey(thread)).with("thread", ThreadKey(thread))
	}
	if err != nil || msg.ID != 0 {
		return th, msg, err
	}
	other, err := s.store.MessageThread(ctx, parent)
	switch {
	case errors.Is(err, ErrNotFound):
		return th, msg, refuse(ReasonMessageNotFound, "there is no message %s", MessageKey(parent)).with("parent", MessageKey(parent))
	case err != nil:
		return th, msg, err
	}
	return th, msg, Invalid("parent", "%s belongs to %s, not %s", MessageKey(parent), ThreadKey(other), ThreadKey(thread))
}

// apply writes an outcome into the thread's state fields and returns its event.
func (s *Service) apply(t *Thread, c Caller, out Outcome, cause string, now time.Time) *Event {
	from := t.State
	t.State = out.To
	t.Origin = originOf(c)
	t.Label = labelOf(c)
	t.StateBy = c.Identity
	t.StateAt = now
	t.ConfirmedAt = nil
	if out.Confirmed {
		t.ConfirmedAt = &now
	}
	if t.Locked() && t.Awaiting.Scope != AwaitNone {
		t.Awaiting = Awaiting{} // a confirmed closed clears awaiting
		t.AwaitingAt = now
	}
	return &Event{Thread: t.ID, Seq: t.Version, From: from, To: out.To, Origin: t.Origin, Actor: c.Identity, Label: t.Label, At: now, Confirmed: out.Confirmed, Cause: cause}
}

func originOf(c Caller) Origin {
	if c.Human() {
		return OriginUser
	}
	return OriginLLM
}

func labelOf(c Caller) string {
	if !c.Human() && c.Has(RightLock) && c.Label != "" {
		return "KI · " + c.Label
	}
	return ""
}

func (s *Service) commitPost(ctx context.Context, cm Commit, idem *Idempotency) (PostResult, error) {
	res := PostResult{Message: viewMessage(*cm.Message), Thread: viewState(cm.Thread)}
	if idem != nil {
		raw, err := json.Marshal(res)
		if err != nil {
			return PostResult{}, err
		}
		cm.Idempotency = &Idempotency{Key: idem.Key, Result: raw, Expires: s.clock.Now().Add(s.idemTTL)}
	}
	if err := s.store.Commit(ctx, cm); err != nil {
		return PostResult{}, err
	}
	return res, nil
}
