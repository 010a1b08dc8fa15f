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

// Post stores one envelope, given as the client's JSON (decisions §2–§4, §7):
// it checks rights first, then the envelope, loop protection, limits, the
// mark the act carries and, for the dialectic kinds, the claim transition;
// then it writes the message, the thread, the event, the claims and the
// idempotency record in one conditional transaction, retrying when a
// concurrent write got there first.
func (s *Service) Post(ctx context.Context, c Caller, envelope []byte, idemKey string) (PostResult, error) {
	if err := need(c, RightWrite); err != nil {
		return PostResult{}, err
	}
	env, err := DecodeEnvelope(envelope, s.limits, s.dialectic)
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

	// The rate budget is taken before any write and given back if the post
	// is refused, so only accepted posts count.
	if err := s.rate.take(ctx, c.TokenID); err != nil {
		return PostResult{}, err
	}
	accepted := false
	defer func() {
		if !accepted {
			s.rate.giveBack(c.TokenID)
		}
	}()
	// Ids are taken once; a retry reuses them, a failed post burns them.
	var ids postIDs
	if ids.message, err = s.ids.take(ctx, "message"); err != nil {
		return PostResult{}, err
	}
	if env.Thread == 0 && env.Claim == 0 {
		if ids.thread, err = s.ids.take(ctx, "thread"); err != nil {
			return PostResult{}, err
		}
	}
	if env.Kind == KindAssert {
		if ids.claim, err = s.ids.take(ctx, "claim"); err != nil {
			return PostResult{}, err
		}
	}
	var res PostResult
	err = s.retry(ctx, func() error {
		var e error
		res, e = s.post(ctx, c, env, ids, idem)
		return e
	})
	accepted = err == nil
	if errors.Is(err, ErrDuplicate) {
		return PostResult{}, refuse(ReasonLimitExceeded, "you have posted this body in this thread already").with("limit", "duplicate")
	}
	if errors.Is(err, ErrExists) { // a concurrent retry with the same key won
		if res, ok, err := s.replay(ctx, idem.Key); err != nil || ok {
			return res, err
		}
		return PostResult{}, Unavailable(time.Second)
	}
	return res, err
}

type postIDs struct{ message, thread, claim int64 }

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

// post is one attempt: read, decide, write. A lost race returns ErrConflict
// and the caller runs it again on fresh reads.
func (s *Service) post(ctx context.Context, c Caller, env Envelope, ids postIDs, idem *Idempotency) (PostResult, error) {
	now := s.clock.Now().UTC()
	sender := Party{Identity: c.Identity, Extension: env.Extension}

	// The claim acted on decides the thread and, by default, the parent.
	var target *Claim
	if env.Claim != 0 {
		cl, err := s.loadClaim(ctx, env.Claim)
		if err != nil {
			return PostResult{}, err
		}
		if env.Thread != 0 && env.Thread != cl.Thread {
			return PostResult{}, Invalid("thread", "%s belongs to %s", ClaimKey(cl.ID), ThreadKey(cl.Thread))
		}
		env.Thread = cl.Thread
		if env.Parent == 0 {
			env.Parent = cl.Message
		}
		target = &cl
	}

	msg := Message{
		ID: ids.message, Kind: env.Kind, From: sender, AuthorKind: c.AuthorKind(),
		Body: env.Body, Provenance: env.Provenance, CreatedAt: now, Evidence: env.Evidence, Supersedes: env.Supersedes,
	}
	var th, next Thread
	var cm Commit
	var parent Message
	newThread := env.Thread == 0
	if newThread {
		msg.Thread, msg.Depth, msg.Asker = ids.thread, 1, sender
		origin := originOf(c)
		// Opening is not a contested mark, so the first open is confirmed.
		next = Thread{
			ID: ids.thread, Creator: sender, CreatedAt: now, Title: titleOf(env.Body), Version: 1,
			State: StateOpen, Origin: origin, ConfirmedAt: &now, Label: labelOf(c), StateBy: c.Identity, StateAt: now,
		}
		cm.Event = &Event{Thread: ids.thread, Seq: 1, To: StateOpen, Origin: origin, Actor: c.Identity, Label: next.Label, At: now, Confirmed: true, Cause: MessageKey(ids.message)}
	} else {
		var err error
		if th, parent, err = s.readParent(ctx, env.Thread, env.Parent); err != nil {
			return PostResult{}, err
		}
		if err := s.checkReply(c, env.Kind, th, parent, sender, target); err != nil {
			return PostResult{}, err
		}
		msg.Thread, msg.Parent, msg.Depth, msg.Asker = th.ID, parent.ID, parent.Depth+1, parent.Asker
		next = th
		next.Version++
		cm.PrevVersion = th.Version
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
		if out.Change {
			cm.Event = s.apply(&next, c, out, MessageKey(ids.message), now)
		}
	}
	// The exchange window restarts whenever the state moves.
	if cm.Event != nil {
		next.Recent = remember(nil, sender, s.limits.Exchange)
	} else {
		next.Recent = remember(th.Recent, sender, s.limits.Exchange)
	}
	if s.limits.DuplicateBody {
		cm.Dedupe = dedupeKey(c.Identity, env.Body)
	}

	if env.Kind == KindAsk {
		msg.Asker = sender
	}
	next.Messages++
	next.UpdatedAt = now

	// Claims: the one asserted and those it supersedes, or the one acted on.
	var claimAfter *Claim
	switch {
	case env.Kind == KindAssert:
		cl := Claim{
			ID: ids.claim, Thread: msg.Thread, ThreadCreator: next.Creator.Identity, Message: msg.ID, Author: sender,
			Body: env.Body, Evidence: env.Evidence, ValidUntil: env.ValidUntil, State: ClaimUnverified, Version: 1,
			CreatedAt: now, UpdatedAt: now, Supersedes: env.Supersedes,
		}
		for _, id := range env.Supersedes {
			old, err := s.loadClaim(ctx, id)
			if err != nil {
				return PostResult{}, err
			}
			if old.Author.Identity != c.Identity && RoleOf(c, old.ThreadCreator) < RoleCreator {
				return PostResult{}, refuse(ReasonThreadAuthorityMissing, "%s is not yours and you have no authority over %s", ClaimKey(id), ThreadKey(old.Thread)).with("claim", ClaimKey(id))
			}
			change, err := s.claimChange(old, kindSupersede, sender, nil, msg.ID, now)
			if err != nil {
				return PostResult{}, err
			}
			change.Claim.SupersededBy = cl.ID
			cm.Claims = append(cm.Claims, change)
		}
		msg.Claim, msg.ClaimState, msg.ClaimValidUntil = cl.ID, cl.State, cl.ValidUntil
		cm.Claims = append([]ClaimChange{{Claim: cl}}, cm.Claims...)
		claimAfter = &cm.Claims[0].Claim
	case target != nil:
		change, err := s.claimChange(*target, env.Kind, sender, env.Evidence, msg.ID, now)
		if err != nil {
			return PostResult{}, err
		}
		msg.Claim = target.ID
		cm.Claims = append(cm.Claims, change)
		claimAfter = &cm.Claims[0].Claim
	}

	if newThread {
		next.Root = msg
	}
	askAuthor := parent.Asker
	if askAuthor == (Party{}) {
		askAuthor = parent.From // no ask above: the answer goes to whom it replies to
	}
	var claimAuthor []Party
	if target != nil {
		claimAuthor = []Party{target.Author}
	}
	aw := awaitingAfter(th.Awaiting, env.Kind, sender, parent.From, askAuthor, next.Creator, newThread, claimAuthor...)
	if aw != th.Awaiting || expectsReply(env.Kind, newThread) {
		next.AwaitingAt, next.AwaitingVersion = now, next.Version
	}
	next.Awaiting = aw
	cm.Thread, cm.Message = next, &msg
	res := PostResult{Message: viewMessage(msg, now), Thread: viewState(next)}
	if claimAfter != nil {
		v := viewClaim(*claimAfter, now)
		res.Claim = &v
	}
	if idem != nil {
		raw, err := json.Marshal(res)
		if err != nil {
			return PostResult{}, err
		}
		cm.Idempotency = &Idempotency{Key: idem.Key, Result: raw, Expires: now.Add(s.idemTTL)}
	}
	if err := s.store.Commit(ctx, cm); err != nil {
		return PostResult{}, err
	}
	return res, nil
}

// checkReply applies the refusals of a reply into an existing thread, in
// order: closed, the verify right, self_attest, self_reply, the limits.
func (s *Service) checkReply(c Caller, kind Kind, th Thread, parent Message, sender Party, target *Claim) error {
	if th.Locked() {
		return refuse(ReasonThreadClosed, "the thread is closed and confirmed; it accepts no message until reopened").with("thread", ThreadKey(th.ID))
	}
	if target != nil {
		if err := checkClaimAct(c, *target, kind); err != nil {
			return err
		}
	}
	if parent.From == sender {
		return refuse(ReasonSelfReply, "the same (identity, extension) cannot reply to its own message").with("parent", MessageKey(parent.ID))
	}
	if parent.Depth+1 > s.limits.Depth {
		return refuse(ReasonLimitExceeded, "the thread may be at most %d messages deep", s.limits.Depth).with("limit", "depth").with("value", s.limits.Depth)
	}
	if th.Messages >= s.limits.ThreadMessages {
		return refuse(ReasonLimitExceeded, "the thread holds its limit of %d messages", s.limits.ThreadMessages).with("limit", "messages").with("value", s.limits.ThreadMessages)
	}
	if s.limits.Exchange > 0 && !dampingExempt(kind) && exchangeLocked(th.Recent, sender, s.limits.Exchange) {
		return exchangeRefusal(s.limits.Exchange)
	}
	return nil
}

// expectsReply reports whether the act sets awaiting anew (decisions §3, §7).
func expectsReply(k Kind, newThread bool) bool {
	switch k {
	case KindAsk, KindAnswer, KindClarify, KindPropose, KindObject, KindEscalate, KindRefute:
		return true
	case KindAssert:
		return newThread
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
		t.AwaitingAt, t.AwaitingVersion = now, t.Version
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
