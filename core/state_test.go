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

// TestMarkTable checks the mark operation for every state (as proposal and
// as confirmed) × every target × every role against decisions §4, written out
// by hand below rather than derived from the code under test.
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
	for _, from := range AllStates {
		for _, confirmed := range []bool{false, true} {
			cur := Current{State: from, Confirmed: confirmed}
			key := string(from)
			if from == StateClosed {
				key += map[bool]string{false: "/p", true: "/c"}[confirmed]
			}
			locked := from == StateClosed && confirmed
			for _, to := range AllStates {
				for _, role := range AllRoles {
					name := fmt.Sprintf("%s/confirmed=%v→%s/%s", from, confirmed, to, role)
					t.Run(name, func(t *testing.T) {
						out, err := Decide(role, cur, OpMark, to)
						var want Reason
						wantConfirmed := role >= RoleLock
						switch {
						case locked:
							want = ReasonThreadClosed
						case role == RoleWriter:
							want = ReasonThreadAuthorityMissing
						case role == RoleHuman:
							// re-mark: anything, except re-marking a confirmed state as itself
							if to == from && confirmed {
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
					})
				}
			}
		}
	}
}

// TestOperationTable covers the acts' marks, confirm and reopen per role.
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
	c := func(s State) Current { return Current{State: s, Confirmed: true} }
	cases := []struct {
		op    Op
		cur   Current
		wants [4]want // writer, creator, lock, human
	}{
		{OpAnswer, c(StateOpen), [4]want{ok(StateAnswered, false), ok(StateAnswered, false), ok(StateAnswered, true), ok(StateAnswered, true)}},
		{OpAnswer, p(StateAnswered), [4]want{same, same, same, same}},
		{OpAnswer, p(StateDecided), [4]want{same, same, same, same}},
		{OpAnswer, p(StateDeferred), [4]want{same, same, same, same}},
		{OpAnswer, c(StateClosed), [4]want{refused(ReasonThreadClosed), refused(ReasonThreadClosed), refused(ReasonThreadClosed), refused(ReasonThreadClosed)}},
		{OpDecide, c(StateOpen), [4]want{refused(ReasonThreadAuthorityMissing), ok(StateDecided, false), ok(StateDecided, true), ok(StateDecided, true)}},
		{OpDecide, p(StateAnswered), [4]want{refused(ReasonThreadAuthorityMissing), ok(StateDecided, false), ok(StateDecided, true), ok(StateDecided, true)}},
		{OpDecide, p(StateDecided), [4]want{refused(ReasonThreadAuthorityMissing), same, same, same}},
		{OpDecide, p(StateClosed), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonInvalidTransition), refused(ReasonInvalidTransition), ok(StateDecided, true)}},
		{OpDecide, c(StateRejected), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonInvalidTransition), refused(ReasonInvalidTransition), ok(StateDecided, true)}},
		{OpConfirm, p(StateAnswered), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonThreadAuthorityMissing), ok(StateAnswered, true), ok(StateAnswered, true)}},
		{OpConfirm, p(StateClosed), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonThreadAuthorityMissing), ok(StateClosed, true), ok(StateClosed, true)}},
		{OpConfirm, c(StateDecided), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonThreadAuthorityMissing), refused(ReasonInvalidTransition), refused(ReasonInvalidTransition)}},
		{OpConfirm, c(StateClosed), [4]want{refused(ReasonThreadClosed), refused(ReasonThreadClosed), refused(ReasonThreadClosed), refused(ReasonThreadClosed)}},
		{OpReopen, c(StateClosed), [4]want{refused(ReasonThreadAuthorityMissing), ok(StateOpen, false), ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, p(StateClosed), [4]want{refused(ReasonThreadAuthorityMissing), ok(StateOpen, false), ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, c(StateDeferred), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonThreadAuthorityMissing), ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, p(StateObsolete), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonThreadAuthorityMissing), ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, c(StateRejected), [4]want{refused(ReasonThreadAuthorityMissing), refused(ReasonThreadAuthorityMissing), ok(StateOpen, true), ok(StateOpen, true)}},
		{OpReopen, c(StateOpen), [4]want{refused(ReasonInvalidTransition), refused(ReasonInvalidTransition), refused(ReasonInvalidTransition), refused(ReasonInvalidTransition)}},
		{OpReopen, p(StateDecided), [4]want{refused(ReasonInvalidTransition), refused(ReasonInvalidTransition), refused(ReasonInvalidTransition), refused(ReasonInvalidTransition)}},
	}
	for _, tc := range cases {
		for i, role := range AllRoles {
			t.Run(fmt.Sprintf("%s/%s/confirmed=%v/%s", tc.op, tc.cur.State, tc.cur.Confirmed, role), func(t *testing.T) {
				w := tc.wants[i]
				out, err := Decide(role, tc.cur, tc.op, "")
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
