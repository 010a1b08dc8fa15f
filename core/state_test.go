package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func reasonOf(err error) Reason {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	if err != nil {
		return "error"
	}
	return ""
}

// TestMarkTable checks the mark operation for every state × who
// confirmed it (a proposal; confirmed by no authority, a lock holder, a
// human) × every target × every role against docs/protocol.md §5 and §5.4,
// written out by hand below rather than derived from the code under test.
func TestMarkTable(t *testing.T) {
	// Targets that creator and lock holder may mark from each state. Closed
	// differs by confirmation; the side states allow nothing.
	authority := map[string]string{
		"open":     "answered decided deferred obsolete rejected",
		"answered": "decided closed deferred obsolete rejected",
		"decided":  "closed deferred obsolete rejected",
		"closed/p": "deferred obsolete rejected",
		"closed/c": "", // thread_closed, for everyone
		"deferred": "",
		"obsolete": "",
		"rejected": "",
	}
	// What each role may change: a proposal or an authority-less
	// confirmation (rank 0), a lock holder's (1), a human's (2).
	rank := map[Role]int{RoleWriter: 0, RoleCreator: 0, RoleLock: 1, RoleHuman: 2}
	confirmations := []struct {
		name      string
		confirmed bool
		by        Confirmer
		rank      int
	}{
		{"proposal", false, ByNone, 0},
		{"confirmed-by-none", true, ByNone, 0},
		{"confirmed-by-lock", true, ByLock, 1},
		{"confirmed-by-human", true, ByHuman, 2},
	}
	for _, from := range AllStates {
		for _, cf := range confirmations {
			cur := Current{State: from, Confirmed: cf.confirmed, By: cf.by}
			key := string(from)
			if from == StateClosed {
				key += map[bool]string{false: "/p", true: "/c"}[cf.confirmed]
			}
			locked := from == StateClosed && cf.confirmed
			for _, to := range AllStates {
				for _, role := range AllRoles {
					name := fmt.Sprintf("%s/%s→%s/%s", from, cf.name, to, role)
					t.Run(name, func(t *testing.T) {
						out, err := Decide(role, cur, OpMark, to)
						var want Reason
						wantConfirmed := role >= RoleLock
						switch {
						case locked:
							want = ReasonThreadClosed
						case role == RoleWriter:
							want = ReasonThreadAuthorityMissing
						case cf.rank > rank[role]:
							want = ReasonThreadAuthorityMissing // a confirmation that outranks the role
						case role == RoleHuman:
							// re-mark: anything, except re-marking a human's own confirmed state as itself
							if to == from && cf.by == ByHuman {
								want = ReasonInvalidTransition
							}
						case !slices.Contains(strings.Fields(authority[key]), string(to)):
							want = ReasonInvalidTransition
						}
						if got := reasonOf(err); got != want {
							t.Fatalf("refusal = %q, want %q", got, want)
						}
						if want == "" && (!out.Change || out.To != to || out.Confirmed != wantConfirmed) {
							t.Fatalf("outcome = %+v, want change to %s confirmed=%v", out, to, wantConfirmed)
						}
						if want == "" && out.Confirmed && out.By != map[Role]Confirmer{RoleLock: ByLock, RoleHuman: ByHuman}[role] {
							t.Fatalf("confirmed by %q as %s", out.By, role)
						}
					})
				}
			}
		}
	}
}

// TestOperationTable covers the acts' marks, confirm and reopen per role
// and per who confirmed the current state.
func TestOperationTable(t *testing.T) {
	type want struct {
		reason    Reason
		change    bool
		to        State
		confirmed bool
	}
	ok := func(to State, confirmed bool) want { return want{change: true, to: to, confirmed: confirmed} }
	same := want{} // accepted, no change of state
	refused := func(r Reason) want { return want{reason: r} }
	p := func(s State) Current { return Current{State: s} }
	c := func(s State) Current { return Current{State: s, Confirmed: true} }              // by no authority
	cl := func(s State) Current { return Current{State: s, Confirmed: true, By: ByLock} } // by a lock holder
	ch := func(s State) Current { return Current{State: s, Confirmed: true, By: ByHuman} }
	noAuth, closedR, badT := refused(ReasonThreadAuthorityMissing), refused(ReasonThreadClosed), refused(ReasonInvalidTransition)
	cases := []struct {
		op    Op
		cur   Current
		to    State   // a confirm's state seen
		wants [4]want // writer, creator, lock, human
	}{
		{OpAnswer, c(StateOpen), "", [4]want{ok(StateAnswered, false), ok(StateAnswered, false), ok(StateAnswered, true), ok(StateAnswered, true)}},
		{OpAnswer, ch(StateOpen), "", [4]want{same, same, same, ok(StateAnswered, true)}},
		{OpAnswer, p(StateAnswered), "", [4]want{same, same, same, same}},
		{OpAnswer, p(StateDecided), "", [4]want{same, same, same, same}},
		{OpAnswer, p(StateDeferred), "", [4]want{same, same, same, same}},
		{OpAnswer, c(StateClosed), "", [4]want{closedR, closedR, closedR, closedR}},
		{OpDecide, c(StateOpen), "", [4]want{noAuth, ok(StateDecided, false), ok(StateDecided, true), ok(StateDecided, true)}},
		{OpDecide, p(StateAnswered), "", [4]want{noAuth, ok(StateDecided, false), ok(StateDecided, true), ok(StateDecided, true)}},
		{OpDecide, cl(StateAnswered), "", [4]want{noAuth, noAuth, ok(StateDecided, true), ok(StateDecided, true)}},
		{OpDecide, ch(StateAnswered), "", [4]want{noAuth, noAuth, noAuth, ok(StateDecided, true)}},
		{OpDecide, p(StateDecided), "", [4]want{noAuth, same, same, same}},
		{OpDecide, ch(StateDecided), "", [4]want{noAuth, noAuth, noAuth, same}},
		{OpDecide, p(StateClosed), "", [4]want{noAuth, badT, badT, ok(StateDecided, true)}},
		{OpDecide, cl(StateRejected), "", [4]want{noAuth, noAuth, badT, ok(StateDecided, true)}},
		{OpConfirm, p(StateAnswered), StateAnswered, [4]want{noAuth, noAuth, ok(StateAnswered, true), ok(StateAnswered, true)}},
		{OpConfirm, p(StateAnswered), StateDecided, [4]want{noAuth, noAuth, badT, badT}}, // the proposal changed since it was seen
		{OpConfirm, p(StateClosed), StateClosed, [4]want{noAuth, noAuth, ok(StateClosed, true), ok(StateClosed, true)}},
		{OpConfirm, c(StateDecided), StateDecided, [4]want{noAuth, noAuth, badT, badT}},
		{OpConfirm, cl(StateClosed), StateClosed, [4]want{closedR, closedR, closedR, closedR}},
		{OpReopen, c(StateClosed), "", [4]want{noAuth, noAuth, ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, cl(StateClosed), "", [4]want{noAuth, noAuth, ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, ch(StateClosed), "", [4]want{noAuth, noAuth, noAuth, ok(StateOpen, true)}},
		{OpReopen, p(StateClosed), "", [4]want{noAuth, ok(StateOpen, false), ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, cl(StateDeferred), "", [4]want{noAuth, noAuth, ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, ch(StateDeferred), "", [4]want{noAuth, noAuth, noAuth, ok(StateOpen, true)}},
		{OpReopen, p(StateObsolete), "", [4]want{noAuth, noAuth, ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, cl(StateRejected), "", [4]want{noAuth, noAuth, ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, c(StateOpen), "", [4]want{badT, badT, badT, badT}},
		{OpReopen, p(StateDecided), "", [4]want{badT, badT, badT, badT}},
	}
	for _, tc := range cases {
		for i, role := range AllRoles {
			t.Run(fmt.Sprintf("%s/%s/confirmed=%v-by-%q/%s", tc.op, tc.cur.State, tc.cur.Confirmed, tc.cur.By, role), func(t *testing.T) {
				w := tc.wants[i]
				out, err := Decide(role, tc.cur, tc.op, tc.to)
				if got := reasonOf(err); got != w.reason {
					t.Fatalf("refusal = %q, want %q", got, w.reason)
				}
				if w.reason == "" && (out.Change != w.change || (w.change && (out.To != w.to || out.Confirmed != w.confirmed))) {
					t.Fatalf("outcome = %+v, want %+v", out, w)
				}
			})
		}
	}
}

func TestRoleOf(t *testing.T) {
	cases := []struct {
		c    Caller
		want Role
	}{
		{Caller{Identity: "ainotes:bob", Rights: []Right{RightRead, RightWrite}}, RoleWriter},
		{Caller{Identity: "ainotes:alice", Rights: []Right{RightRead, RightWrite}}, RoleCreator},
		{Caller{Identity: "ainotes:alice", Rights: []Right{RightWrite, RightLock}}, RoleLock},
		{Caller{Identity: "human:hana"}, RoleHuman},
	}
	for _, tc := range cases {
		t.Run(tc.c.Identity+"/"+tc.want.String(), func(t *testing.T) {
			if got := RoleOf(tc.c, "ainotes:alice"); got != tc.want {
				t.Fatalf("RoleOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestManifestTransitionsMatchTheRule(t *testing.T) {
	tr := Transitions()
	if got := tr[StateOpen]; slices.Contains(got, StateClosed) || !slices.Contains(got, StateDecided) {
		t.Fatalf("open → %v", got)
	}
	for _, side := range []State{StateDeferred, StateObsolete, StateRejected} {
		if got := tr[side]; len(got) != 1 || got[0] != StateOpen {
			t.Fatalf("%s → %v, want only reopen", side, got)
		}
	}
}
