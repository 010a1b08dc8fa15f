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

// Post stores one envelope, given as the client's JSON (docs/protocol.md §3–§5, §11).
//
// Order: the write right, the envelope, the idempotency key (a replay
// returns the first result), the rate budget, then per attempt the thread
// and parent, loop protection, limits, the mark the act carries and, for the
// dialectic kinds, the claim transition; then the message, the thread, the
// event, the claims and the idempotency record are written in one
// conditional transaction, retried on fresh state when a concurrent write
// got there first.
//
// Refusals: token_right_missing, invalid_body, rate_limited, thread_not_found,
// message_not_found, claim_not_found, thread_closed, self_reply,
// self_attest, thread_authority_missing, invalid_transition,
// limit_exceeded, unavailable.
func (s *Service) Post(ctx context.Context, c Caller, in PostInput) (PostResult, error) {
	env := in.env
	idem, err := s.idempotencyKey(c, env, in.key)
	if err != nil {
		return PostResult{}, err
	}
	if idem != nil {
		if res, ok, err := s.replay(ctx, idem); err != nil || ok {
			return res, err
		}
	}

	// The rate budget is taken before any write and returned to the window
	// it came from if the post is refused, so only accepted posts count.
	spent, err := s.rate.take(ctx, c.TokenID)
	if err != nil {
		return PostResult{}, err
	}
	accepted := false
	defer func() {
		if !accepted {
			s.rate.giveBack(spent)
		}
	}()

	// Thread and claim ids are taken once; a retry reuses them, a refused
	// post burns them. Message ids follow from the thread (MessageID).
	var ids postIDs
	if env.Thread == 0 && env.Claim == 0 {
		if ids.thread, err = s.store.NextID(ctx, "thread"); err != nil {
			return PostResult{}, err
		}
	}
	if env.Kind == KindAssert {
		if ids.claim, err = s.store.NextID(ctx, "claim"); err != nil {
			return PostResult{}, err
		}
	}
	var res PostResult
	var parent *Message // immutable: read once, kept across attempts
	err = s.retry(ctx, func(current *Thread) error {
		var e error
		res, e = s.postOnce(ctx, c, env, ids, idem, current, &parent)
		return e
	})
	accepted = err == nil
	switch {
	case errors.Is(err, ErrDuplicate):
		return PostResult{}, refuse(ReasonLimitExceeded, "you have posted this body in this thread already").with("limit", "duplicate").
			with("hint", "say something new; if the thread goes in circles, post escalate (hands the turn to a human)")
	case errors.Is(err, ErrExists): // a concurrent retry with the same key won
		if res, ok, err := s.replay(ctx, idem); err != nil || ok {
			return res, err
		}
		return PostResult{}, Unavailable(time.Second, errors.New("idempotency record vanished"))
	}
	return res, err
}

// PostInput is post's input: the envelope, and the idempotency key
// (idempotency_key: the MCP argument, the HTTP header Idempotency-Key).
type PostInput struct {
	env Envelope
	key string
}

func (in *PostInput) decode(s *Service, data []byte) (err error) {
	in.env, in.key, err = DecodeEnvelope(data, s.limits, s.dialectic)
	return err
}

// PostJSON posts an envelope given as JSON, for Go callers that hold the
// write right (the transports go through Call).
func (s *Service) PostJSON(ctx context.Context, c Caller, envelope []byte) (PostResult, error) {
	if err := need(c, RightWrite); err != nil {
		return PostResult{}, err
	}
	var in PostInput
	if err := in.decode(s, envelope); err != nil {
		return PostResult{}, err
	}
	return s.Post(ctx, c, in)
}

type postIDs struct{ thread, claim int64 }

// idempotencyKey validates a client's key and binds it to the token and to
// the request, so that the same key with another envelope is refused.
func (s *Service) idempotencyKey(c Caller, env Envelope, key string) (*Idempotency, error) {
	if key == "" {
		return nil, nil
	}
	if len(key) > s.limits.IdempotencyKey || !printable(key) {
		return nil, Invalid("idempotency_key", "the idempotency key must be 1 to %d printable characters", s.limits.IdempotencyKey)
	}
	sum := sha256.Sum256([]byte(c.TokenID + "\x00" + key))
	req, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	rs := sha256.Sum256(req)
	return &Idempotency{Key: hex.EncodeToString(sum[:]), Request: hex.EncodeToString(rs[:16])}, nil
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// replay answers a post whose key was used: the stored message, the
// thread's state as it is now, and the claim. A different request under the
// same key is refused.
func (s *Service) replay(ctx context.Context, idem *Idempotency) (PostResult, bool, error) {
	rec, err := s.store.Idempotent(ctx, idem.Key)
	if errors.Is(err, ErrNotFound) {
		return PostResult{}, false, nil
	}
	if err != nil {
		return PostResult{}, false, err
	}
	if rec.Request != idem.Request {
		return PostResult{}, false, Invalid("idempotency_key", "this idempotency key was used for a different request; use a new key for a new message")
	}
	th, msg, err := s.store.ThreadAndMessage(ctx, rec.Thread, rec.Message)
	if err != nil {
		return PostResult{}, false, err
	}
	if msg.ID == 0 {
		return PostResult{}, false, errors.New("idempotency record points to a missing message")
	}
	now := s.clock.Now()
	res := PostResult{Message: viewMessage(msg, now), Thread: viewState(th), Replayed: true}
	if rec.Claim != 0 {
		cl, err := s.loadClaim(ctx, rec.Claim)
		if err != nil {
			return PostResult{}, false, err
		}
		v := viewClaim(cl, now)
		res.Claim = &v
	}
	return res, true, nil
}

// draft is one attempt's write under construction.
type draft struct {
	c         Caller
	env       Envelope
	act       Act
	sender    Party
	now       time.Time
	prev      Thread // the thread as read (zero for a new thread)
	next      Thread
	parent    Message
	msg       Message
	target    *Claim // the claim a dialectic act acts on
	commit    Commit
	claimView *Claim
}

// postOnce is one attempt: read (or take current), decide, write. A lost
// race returns a *Conflict and the caller runs it again.
func (s *Service) postOnce(ctx context.Context, c Caller, env Envelope, ids postIDs, idem *Idempotency, current *Thread, parent **Message) (PostResult, error) {
	act, _ := actOf(env.Kind, s.dialectic)
	d := &draft{c: c, env: env, act: act, sender: Party{Identity: c.Identity, Extension: env.Extension}, now: s.clock.Now().UTC()}
	if err := s.resolveClaim(ctx, d); err != nil {
		return PostResult{}, err
	}
	newThread := d.env.Thread == 0
	if newThread {
		s.open(d, ids.thread)
	} else if err := s.reply(ctx, d, current, parent); err != nil {
		return PostResult{}, err
	}
	if err := s.claims(ctx, d, ids.claim); err != nil {
		return PostResult{}, err
	}
	s.turn(d, newThread)
	if s.limits.DuplicateBody && !c.Human() {
		d.commit.Dedupe = dedupeKey(c.Identity, env.Body)
	}
	d.next.queue(d.prev)
	d.commit.Thread, d.commit.Message = d.next, &d.msg
	res := PostResult{Message: viewMessage(d.msg, d.now), Thread: viewState(d.next)}
	if d.claimView != nil {
		v := viewClaim(*d.claimView, d.now)
		res.Claim = &v
	}
	if idem != nil {
		rec := *idem
		rec.Thread, rec.Message, rec.Expires = d.next.ID, d.msg.ID, d.now.Add(s.idemTTL)
		if d.claimView != nil {
			rec.Claim = d.claimView.ID
		}
		d.commit.Idempotency = &rec
	}
	var prev *Thread
	if !newThread {
		prev = &d.prev
	}
	if err := s.commit(ctx, prev, d.commit); err != nil {
		return PostResult{}, err
	}
	return res, nil
}

// resolveClaim reads the claim a dialectic act names; it decides the thread
// and, by default, the parent.
func (s *Service) resolveClaim(ctx context.Context, d *draft) error {
	if d.env.Claim == 0 {
		return nil
	}
	cl, err := s.loadClaim(ctx, d.env.Claim)
	if err != nil {
		return err
	}
	if d.env.Thread != 0 && d.env.Thread != cl.Thread {
		return Invalid("thread", "%s belongs to %s", ClaimKey(cl.ID), ThreadKey(cl.Thread))
	}
	d.env.Thread = cl.Thread
	if d.env.Parent == 0 {
		d.env.Parent = cl.Message
	}
	d.target = &cl
	return nil
}

// open drafts a new thread with its root message. Opening is not a
// contested mark, so the first open is confirmed.
func (s *Service) open(d *draft, id int64) {
	origin := originOf(d.c)
	d.msg = Message{ID: MessageID(id, 1), Thread: id, Depth: 1, Asker: d.sender}
	d.fill()
	d.next = Thread{
		ID: id, Creator: d.sender, CreatedAt: d.now, UpdatedAt: d.now, Title: titleOf(d.env.Body), Version: 1, Messages: 1,
		State: StateOpen, Origin: origin, ConfirmedAt: &d.now, Label: labelOf(d.c), StateBy: d.c.Identity, StateAt: d.now,
		StateMsg: d.msg.ID, RootKind: d.msg.Kind,
	}
	d.commit.Event = &Event{Thread: id, Seq: 1, To: StateOpen, Origin: origin, Actor: d.c.Identity, Label: d.next.Label, At: d.now, Confirmed: true, Cause: MessageKey(d.msg.ID)}
	d.next.Recent = remember(nil, d.sender.Identity, s.limits.Exchange)
}

// fill copies the envelope into the draft message.
func (d *draft) fill() {
	d.msg.Kind, d.msg.From, d.msg.AuthorKind = d.env.Kind, d.sender, d.c.AuthorKind()
	d.msg.Body, d.msg.Provenance, d.msg.CreatedAt = d.env.Body, d.env.Provenance, d.now
	d.msg.Evidence, d.msg.Supersedes = d.env.Evidence, d.env.Supersedes
}

// reply drafts a message into an existing thread: the thread as the last
// lost race found it (or read now), the effective parent, the checks, and
// the mark the act carries.
func (s *Service) reply(ctx context.Context, d *draft, current *Thread, parent **Message) error {
	if current != nil && *parent != nil {
		d.prev, d.parent = *current, **parent
	} else {
		th, p, err := s.readParent(ctx, d.env.Thread, d.env.Parent)
		if err != nil {
			return err
		}
		d.prev, d.parent = th, p
		*parent = &p
	}
	if err := s.checkReply(d); err != nil {
		return err
	}
	d.next = d.prev
	d.next.Version++
	d.next.Messages++
	d.next.UpdatedAt = d.now
	d.commit.PrevVersion = d.prev.Version
	d.msg = Message{ID: MessageID(d.prev.ID, d.next.Messages), Thread: d.prev.ID, Parent: d.parent.ID, Depth: d.parent.Depth + 1, Asker: d.parent.Asker}
	if d.env.Kind == KindAsk {
		d.msg.Asker = d.sender // the nearest ask at or above is this one
	}
	d.fill()
	if op := d.act.Marks; op != "" {
		out, err := Decide(RoleOf(d.c, d.prev.Creator.Identity), d.prev.current(), op, "")
		if err != nil {
			return err
		}
		if out.Change {
			d.commit.Event = s.apply(&d.next, d.c, out, MessageKey(d.msg.ID), d.now)
			d.next.StateMsg = d.msg.ID
		}
	}
	// The exchange window restarts whenever the state moves.
	if d.commit.Event != nil {
		d.next.Recent = remember(nil, d.sender.Identity, s.limits.Exchange)
	} else {
		d.next.Recent = remember(d.prev.Recent, d.sender.Identity, s.limits.Exchange)
	}
	return nil
}

// claims drafts the claim writes: the one asserted and those it
// supersedes, or the one acted on.
func (s *Service) claims(ctx context.Context, d *draft, claimID int64) error {
	switch {
	case d.act.Claim == ClaimMakes:
		cl := Claim{
			ID: claimID, Thread: d.msg.Thread, ThreadCreator: d.next.Creator.Identity, Message: d.msg.ID, Author: d.sender,
			Body: d.env.Body, Evidence: d.env.Evidence, ValidUntil: d.env.ValidUntil, State: ClaimUnverified, Version: 1,
			CreatedAt: d.now, UpdatedAt: d.now, Supersedes: d.env.Supersedes,
		}
		var changes []ClaimChange
		for _, id := range d.env.Supersedes {
			old, err := s.loadClaim(ctx, id)
			if err != nil {
				return err
			}
			if old.Author.Identity != d.c.Identity && RoleOf(d.c, old.ThreadCreator) < RoleCreator {
				return refuse(ReasonThreadAuthorityMissing, "%s is not yours and you have no authority over %s", ClaimKey(id), ThreadKey(old.Thread)).with("claim", ClaimKey(id))
			}
			// A supersession changes the superseded claim's thread too: a
			// confirmed closed thread accepts no change (docs/protocol.md §11). The
			// commit re-checks it, so a close in between cannot slip through.
			if old.Thread != d.msg.Thread {
				other, err := s.loadThread(ctx, old.Thread)
				if err != nil {
					return err
				}
				if other.Locked() {
					return refuse(ReasonThreadClosed, "%s belongs to %s, which is closed and confirmed; reopen it first", ClaimKey(id), ThreadKey(old.Thread)).with("claim", ClaimKey(id)).with("thread", ThreadKey(old.Thread))
				}
				d.commit.Open = append(d.commit.Open, old.Thread)
			}
			if old.SupersededBy != 0 {
				return refuse(ReasonInvalidTransition, "%s was superseded by %s already", ClaimKey(id), ClaimKey(old.SupersededBy)).with("claim", ClaimKey(id))
			}
			change, err := claimChange(old, kindSupersede, d.sender, nil, d.msg.ID, d.now)
			if err != nil {
				return err
			}
			change.Claim.SupersededBy = cl.ID
			changes = append(changes, change)
		}
		d.msg.Claim, d.msg.ClaimState, d.msg.ClaimValidUntil = cl.ID, cl.State, cl.ValidUntil
		d.commit.Claims = append([]ClaimChange{{Claim: cl}}, changes...)
		d.claimView = &d.commit.Claims[0].Claim
	case d.target != nil:
		change, err := claimChange(*d.target, d.env.Kind, d.sender, d.env.Evidence, d.msg.ID, d.now)
		if err != nil {
			return err
		}
		d.msg.Claim = d.target.ID
		d.commit.Claims = append(d.commit.Claims, change)
		d.claimView = &d.commit.Claims[0].Claim
	}
	return nil
}

// turn applies the act's awaiting rule and remembers when awaiting was set
// (the inbox entry moves only then).
func (s *Service) turn(d *draft, newThread bool) {
	askAuthor := d.parent.Asker
	if askAuthor == (Party{}) {
		askAuthor = d.parent.From // no ask above: the answer goes to whom it replies to
	}
	p := turnParties{sender: d.sender, parent: d.parent.From, asker: askAuthor, creator: d.next.Creator}
	if d.target != nil {
		p.claimAuthor = d.target.Author
	}
	aw := awaitingAfter(d.next.Awaiting, d.act, newThread, p)
	if newThread || aw != d.next.Awaiting || d.act.expectsReply(newThread) {
		d.next.AwaitingVersion, d.next.AwaitingMsg = d.next.Version, d.msg.ID
	}
	d.next.Awaiting = aw
}

// checkReply applies the refusals of a reply into an existing thread, in
// order: closed, the verify right, self_attest, self_reply, a superseded
// target, the limits.
func (s *Service) checkReply(d *draft) error {
	th, parent, sender := d.prev, d.parent, d.sender
	if th.Locked() {
		return refuse(ReasonThreadClosed, "the thread is closed and confirmed; it accepts no message until reopened").with("thread", ThreadKey(th.ID))
	}
	if d.target != nil {
		if err := checkClaimAct(d.c, *d.target, d.act); err != nil {
			return err
		}
	}
	if parent.From == sender {
		return refuse(ReasonSelfReply, "the same (identity, extension) cannot reply to its own message").with("parent", MessageKey(parent.ID))
	}
	if d.target != nil {
		if err := checkClaimOpen(*d.target); err != nil {
			return err
		}
	}
	if parent.Depth+1 > s.limits.Depth {
		return refuse(ReasonLimitExceeded, "the thread may be at most %d messages deep", s.limits.Depth).with("limit", "depth").with("value", s.limits.Depth)
	}
	if th.Messages >= s.limits.ThreadMessages {
		return refuse(ReasonLimitExceeded, "the thread holds its limit of %d messages", s.limits.ThreadMessages).with("limit", "messages").with("value", s.limits.ThreadMessages)
	}
	// Loop damping (docs/protocol.md §8), by identity; humans are exempt.
	if s.limits.Exchange > 0 && !d.act.Exempt && !d.c.Human() {
		if err := exchangeLocked(th.Recent, sender.Identity, s.limits.Exchange); err != nil {
			return err
		}
	}
	return nil
}

// readParent reads the thread and the effective parent: the given one, or
// the root. Message ids carry their thread, so the thread and the named
// parent are one read wherever the parent is; one in another thread is
// invalid_body, one nowhere message_not_found.
func (s *Service) readParent(ctx context.Context, thread, parent int64) (Thread, Message, error) {
	if parent == 0 {
		th, err := s.loadThread(ctx, thread)
		return th, th.root(), err
	}
	th, msg, err := s.store.ThreadAndMessage(ctx, thread, parent)
	switch {
	case errors.Is(err, ErrNotFound):
		return th, msg, threadNotFound(thread)
	case err != nil:
		return th, msg, err
	case msg.ID == 0:
		return th, msg, refuse(ReasonMessageNotFound, "there is no message %s", MessageKey(parent)).with("parent", MessageKey(parent))
	case msg.Thread != thread:
		return th, Message{}, Invalid("parent", "%s belongs to %s, not %s", MessageKey(parent), ThreadKey(msg.Thread), ThreadKey(thread))
	}
	return th, msg, nil
}

// apply writes an outcome into the thread's state fields and returns its event.
func (s *Service) apply(t *Thread, c Caller, out Outcome, cause string, now time.Time) *Event {
	from := t.State
	t.State = out.To
	t.Origin = originOf(c)
	t.Label = labelOf(c)
	t.StateBy = c.Identity
	t.StateAt = now
	t.StateMsg = 0
	t.ConfirmedAt, t.ConfirmedBy = nil, ByNone
	if out.Confirmed {
		t.ConfirmedAt, t.ConfirmedBy = &now, out.By
	}
	// Awaiting follows the state (docs/protocol.md §4.2): a thread that is
	// decided, closed or set aside awaits nobody; one opened again is an
	// open call to everyone but whoever opened it.
	aw := t.Awaiting
	switch {
	case out.To == StateDecided || out.To == StateClosed || out.To.Side():
		aw = Awaiting{}
	case out.To == StateOpen && from != StateOpen:
		aw = Awaiting{Scope: AwaitAny, Party: Party{Identity: c.Identity}}
	}
	if aw != t.Awaiting {
		t.Awaiting = aw
		t.AwaitingVersion, t.AwaitingMsg = t.Version, 0
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
