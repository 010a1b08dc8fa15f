package core

import (
	"context"
	"errors"
	"time"
)

// loadClaim reads a claim, turning a missing one into claim_not_found.
func (s *Service) loadClaim(ctx context.Context, id int64) (Claim, error) {
	cl, err := s.store.Claim(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return cl, claimNotFound(id)
	}
	return cl, err
}

// checkClaimAct is who may act on a claim: verify needs the verify right,
// and nobody attests or verifies their own identity's claim.
func checkClaimAct(c Caller, cl Claim, act Act) error {
	if act.NeedRight != "" && !c.Has(act.NeedRight) {
		return refuse(ReasonTokenRightMissing, "%s needs the %s right", act.Kind, act.NeedRight).with("right", act.NeedRight)
	}
	if (act.Kind == KindAttest || act.Kind == KindVerify) && cl.Author.Identity == c.Identity {
		return refuse(ReasonSelfAttest, "a claim cannot be %s by its own author's identity", pastTense(act.Kind)).with("claim", ClaimKey(cl.ID))
	}
	return nil
}

// checkClaimOpen refuses acts on a superseded claim, refuted or not: it
// accepts nothing more. Checked after who may act, so a caller learns the
// rule that concerns them first.
func checkClaimOpen(cl Claim) error {
	if cl.SupersededBy != 0 {
		return refuse(ReasonInvalidTransition, "%s was superseded by %s; it accepts nothing", ClaimKey(cl.ID), ClaimKey(cl.SupersededBy)).with("claim", ClaimKey(cl.ID)).with("superseded_by", ClaimKey(cl.SupersededBy))
	}
	return nil
}

// claimChange applies one act to a claim and returns the write: the claim
// at its next version and the history record.
func claimChange(cl Claim, kind Kind, actor Party, ev []Evidence, msg int64, now time.Time) (ClaimChange, error) {
	to, err := ClaimStep(kind, cl.State)
	if err != nil {
		return ClaimChange{}, err
	}
	next := cl
	next.State, next.Version, next.UpdatedAt = to, cl.Version+1, now
	rec := &ClaimRecord{Claim: cl.ID, Seq: next.Version, Kind: kind, Actor: actor, At: now, Evidence: ev, Message: msg, From: cl.State, To: to}
	return ClaimChange{Claim: next, PrevVersion: cl.Version, Record: rec}, nil
}

// ClaimView is a claim as returned to clients.
type ClaimView struct {
	ID           string            `json:"id"`
	Thread       string            `json:"thread"`
	Message      string            `json:"message"`
	Author       Party             `json:"author"`
	Body         string            `json:"body"`
	Evidence     []Evidence        `json:"evidence"`
	State        ClaimState        `json:"state"`
	ValidUntil   *time.Time        `json:"valid_until"`
	Expired      bool              `json:"expired"`
	Supersedes   []string          `json:"supersedes"`
	SupersededBy *string           `json:"superseded_by"`
	Version      int64             `json:"version"`
	CreatedAt    time.Time         `json:"created_at"`
	UpdatedAt    time.Time         `json:"updated_at"`
	History      []ClaimRecordView `json:"history,omitempty"`
}

// ClaimRecordView is one attestation, refutation, verification or supersession.
type ClaimRecordView struct {
	Kind     Kind       `json:"kind"`
	Actor    Party      `json:"actor"`
	At       time.Time  `json:"at"`
	Evidence []Evidence `json:"evidence"`
	Message  string     `json:"message"`
	From     ClaimState `json:"from"`
	To       ClaimState `json:"to"`
}

func expired(until *time.Time, now time.Time) bool { return until != nil && now.After(*until) }

func viewClaim(cl Claim, now time.Time) ClaimView {
	v := ClaimView{
		ID: ClaimKey(cl.ID), Thread: ThreadKey(cl.Thread), Message: MessageKey(cl.Message), Author: cl.Author,
		Body: cl.Body, Evidence: cl.Evidence, State: cl.State, ValidUntil: cl.ValidUntil, Expired: expired(cl.ValidUntil, now),
		Supersedes: []string{}, Version: cl.Version, CreatedAt: cl.CreatedAt, UpdatedAt: cl.UpdatedAt,
	}
	if v.Evidence == nil {
		v.Evidence = []Evidence{}
	}
	for _, id := range cl.Supersedes {
		v.Supersedes = append(v.Supersedes, ClaimKey(id))
	}
	if cl.SupersededBy != 0 {
		k := ClaimKey(cl.SupersededBy)
		v.SupersededBy = &k
	}
	return v
}

// GetClaimInput is get_claim's input.
type GetClaimInput struct {
	Claim ClaimRef `json:"claim" in:"path" required:"true" doc:"the claim: cl_N"`
}

// GetClaim returns a claim with its evidence and whole history.
//
// Refusals: invalid_body, claim_not_found, unavailable.
func (s *Service) GetClaim(ctx context.Context, c Caller, in GetClaimInput) (ClaimView, error) {
	id := int64(in.Claim)
	cl, recs, err := s.store.ClaimHistory(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return ClaimView{}, claimNotFound(id)
	}
	if err != nil {
		return ClaimView{}, err
	}
	v := viewClaim(cl, s.clock.Now())
	v.History = make([]ClaimRecordView, 0, len(recs))
	for _, r := range recs {
		ev := r.Evidence
		if ev == nil {
			ev = []Evidence{}
		}
		v.History = append(v.History, ClaimRecordView{Kind: r.Kind, Actor: r.Actor, At: r.At, Evidence: ev, Message: MessageKey(r.Message), From: r.From, To: r.To})
	}
	return v, nil
}

// ListClaimsInput is list_claims' input.
type ListClaimsInput struct {
	Thread ThreadRef  `json:"thread" doc:"only claims made in this thread"`
	State  ClaimState `json:"state" doc:"only claims in this state"`
	Cursor string     `json:"cursor" doc:"the cursor of the previous page, to continue"`
	Limit  PageLimit  `json:"limit" doc:"page size, default 50, at most 200"`
}

// ClaimPage is a page of claims; Cursor continues it, null at the end.
type ClaimPage struct {
	Claims []ClaimView `json:"claims"`
	Cursor *string     `json:"cursor"`
}

// ListClaims pages through claims, newest first, by thread and/or state.
//
// Refusals: invalid_body, unavailable.
func (s *Service) ListClaims(ctx context.Context, c Caller, in ListClaimsInput) (ClaimPage, error) {
	q := struct {
		Thread int64
		Cursor string
		Limit  int
	}{int64(in.Thread), in.Cursor, int(in.Limit)}
	st := in.State
	if st != "" && !st.Valid() {
		return ClaimPage{}, Invalid("state", "unknown claim state %q", st)
	}
	after, err := decodeIDCursor("cursor", "claims", q.Cursor)
	if err != nil {
		return ClaimPage{}, err
	}
	cls, next, err := s.store.Claims(ctx, ClaimQuery{Thread: q.Thread, State: st, After: after, Limit: s.page(q.Limit)})
	if err != nil {
		return ClaimPage{}, err
	}
	now := s.clock.Now()
	page := ClaimPage{Claims: make([]ClaimView, 0, len(cls)), Cursor: nextCursor("claims", idPosition(next))}
	for _, cl := range cls {
		page.Claims = append(page.Claims, viewClaim(cl, now))
	}
	return page, nil
}
