package core

// State is a thread's one state (docs/protocol.md §5).
type State string

// The seven states: four forward, three side states.
const (
	StateOpen     State = "open"
	StateAnswered State = "answered"
	StateDecided  State = "decided"
	StateClosed   State = "closed"
	StateDeferred State = "deferred"
	StateObsolete State = "obsolete"
	StateRejected State = "rejected"
)

// AllStates in manifest order.
var AllStates = []State{StateOpen, StateAnswered, StateDecided, StateClosed, StateDeferred, StateObsolete, StateRejected}

// forwardRank orders the forward states; side states have none.
var forwardRank = map[State]int{StateOpen: 0, StateAnswered: 1, StateDecided: 2, StateClosed: 3}

// Valid reports whether s names a state.
func (s State) Valid() bool {
	_, fwd := forwardRank[s]
	return fwd || s.Side()
}

// Side reports whether s is one of the side states (endpoints).
func (s State) Side() bool {
	return s == StateDeferred || s == StateObsolete || s == StateRejected
}

// Origin says who set a state: a human ("user") or a model ("llm").
type Origin string

// The two origins.
const (
	OriginUser Origin = "user"
	OriginLLM  Origin = "llm"
)

// Role is what a caller is with respect to one thread, highest first wins.
type Role int

// Roles, weakest first. Only writers reach a role; readers are refused earlier.
const (
	RoleWriter  Role = iota // a token with write and nothing more here
	RoleCreator             // opened the thread (same identity, any extension)
	RoleLock                // holds the lock right: moderation, confirmed marks
	RoleHuman               // outranks everything
)

// AllRoles for tables and tests.
var AllRoles = []Role{RoleWriter, RoleCreator, RoleLock, RoleHuman}

func (r Role) String() string {
	return [...]string{"writer", "creator", "lock", "human"}[r]
}

// RoleOf gives the caller's role over a thread created by creator.
func RoleOf(c Caller, creator string) Role {
	switch {
	case c.Human():
		return RoleHuman
	case c.Has(RightLock):
		return RoleLock
	case c.Identity == creator:
		return RoleCreator
	default:
		return RoleWriter
	}
}

// Op is a way of changing a thread's state.
type Op string

// The operations that may change state. OpAnswer and OpDecide are the marks
// carried by the acts answer and decide; the rest are operations of §9.
const (
	OpAnswer  Op = "answer"
	OpDecide  Op = "decide"
	OpMark    Op = "mark"
	OpConfirm Op = "confirm"
	OpReopen  Op = "reopen"
)

// Confirmer says who confirmed a thread's state (docs/protocol.md §5.4): what
// it takes to change it again.
type Confirmer string

const (
	// ByNone: a proposal, or a state no authority confirmed (a thread's
	// first open): any mark with authority may change it.
	ByNone Confirmer = ""
	// ByLock: confirmed by a lock holder: a lock holder or a human may change it.
	ByLock Confirmer = "lock"
	// ByHuman: confirmed by a human: only a human may change it.
	ByHuman Confirmer = "human"
)

// rank orders confirmers and roles on one scale: what a role may change.
func (c Confirmer) rank() int {
	switch c {
	case ByLock:
		return 1
	case ByHuman:
		return 2
	}
	return 0
}

func (r Role) rank() int {
	switch r {
	case RoleLock:
		return 1
	case RoleHuman:
		return 2
	}
	return 0
}

// confirmer is what a role's confirmed mark makes of the state.
func (r Role) confirmer() Confirmer {
	switch r {
	case RoleLock:
		return ByLock
	case RoleHuman:
		return ByHuman
	}
	return ByNone
}

// Current is the part of a thread the transition rule looks at.
type Current struct {
	State     State
	Confirmed bool
	By        Confirmer // who confirmed it (ByNone for a proposal)
}

func (c Current) locked() bool { return c.State == StateClosed && c.Confirmed }

// Outcome is what a permitted change does. Change false means the request is
// accepted but the state stays as it is (an answer on a thread that is not
// open, a decide on a decided thread).
type Outcome struct {
	Change    bool
	To        State
	Confirmed bool
	By        Confirmer
}

// step is the transition table for everyone but the human's re-mark:
// forward one or two steps, or a side state from open/answered/decided or from
// an unconfirmed closed.
func step(cur Current, to State) bool {
	if to.Side() {
		switch cur.State {
		case StateOpen, StateAnswered, StateDecided:
			return true
		case StateClosed:
			return !cur.Confirmed
		}
		return false
	}
	from, okFrom := forwardRank[cur.State]
	target, okTo := forwardRank[to]
	if !okFrom || !okTo {
		return false
	}
	d := target - from
	return d == 1 || d == 2
}

// Decide is the one rule for who may change what (docs/protocol.md §5, §5.4). It
// is called for every state-changing act and operation on both transports.
// to is the target of a mark, and for confirm the proposal the moderator saw.
func Decide(role Role, cur Current, op Op, to State) (Outcome, error) {
	if cur.locked() && op != OpReopen {
		return Outcome{}, refuse(ReasonThreadClosed, "the thread is closed and confirmed; reopen it first")
	}
	// A confirmed state is changed only by whoever may change what
	// confirmed it: a human's only by a human, a lock holder's by a lock
	// holder or a human. A model's proposal never replaces it.
	outranked := cur.Confirmed && cur.By.rank() > role.rank()
	outrankedBy := func() error {
		who := map[Confirmer]string{ByLock: "a lock holder", ByHuman: "a human"}[cur.By]
		allowed := map[Confirmer]string{ByLock: "a lock holder or a human", ByHuman: "a human"}[cur.By]
		return refuse(ReasonThreadAuthorityMissing, "the state %s was confirmed by %s; only %s may change it", cur.State, who, allowed).
			with("state", cur.State).with("confirmed_by", cur.By)
	}
	ok := func(to State) (Outcome, error) {
		out := Outcome{Change: true, To: to, Confirmed: role >= RoleLock}
		if out.Confirmed {
			out.By = role.confirmer()
		}
		return out, nil
	}
	switch op {
	case OpAnswer:
		if cur.State != StateOpen || outranked {
			return Outcome{}, nil // the answer is a message; it marks nothing here
		}
		return ok(StateAnswered)
	case OpDecide, OpMark:
		if op == OpDecide {
			to = StateDecided
		}
		if role < RoleCreator {
			return Outcome{}, refuse(ReasonThreadAuthorityMissing, "only the thread's creator, a lock holder or a human may mark this thread")
		}
		if outranked {
			return Outcome{}, outrankedBy()
		}
		if op == OpDecide && cur.State == StateDecided {
			return Outcome{}, nil
		}
		if role == RoleHuman {
			// The human may re-mark any state from any state; a mark that
			// would change nothing is not a change.
			if to == cur.State && cur.Confirmed && cur.By == ByHuman {
				return Outcome{}, refuse(ReasonInvalidTransition, "the thread is already %s", to).with("from", cur.State).with("to", to)
			}
			return ok(to)
		}
		if to == StateOpen || !step(cur, to) {
			return Outcome{}, refuse(ReasonInvalidTransition, "%s cannot move to %s", cur.State, to).with("from", cur.State).with("to", to)
		}
		return ok(to)
	case OpConfirm:
		if role < RoleLock {
			return Outcome{}, refuse(ReasonThreadAuthorityMissing, "only a lock holder or a human may confirm")
		}
		if cur.Confirmed {
			return Outcome{}, refuse(ReasonInvalidTransition, "there is no proposal to confirm").with("from", cur.State).with("to", to)
		}
		if to != cur.State {
			return Outcome{}, refuse(ReasonInvalidTransition, "the proposal is now %s, not %s; nothing was confirmed", cur.State, to).with("from", cur.State).with("to", to)
		}
		return ok(cur.State)
	case OpReopen:
		switch {
		case cur.State == StateClosed:
			if role < RoleCreator {
				return Outcome{}, refuse(ReasonThreadAuthorityMissing, "only the creator, a lock holder or a human may reopen a closed thread")
			}
			if role == RoleCreator && cur.Confirmed {
				return Outcome{}, refuse(ReasonThreadAuthorityMissing, "the creator reopens only a closed that is a proposal; this one was confirmed").with("confirmed_by", cur.By)
			}
		case cur.State.Side():
			if role < RoleLock {
				return Outcome{}, refuse(ReasonThreadAuthorityMissing, "only a lock holder or a human may reopen a %s thread", cur.State)
			}
		default:
			return Outcome{}, refuse(ReasonInvalidTransition, "only a closed thread or one in a side state can be reopened").with("from", cur.State).with("to", StateOpen)
		}
		if outranked {
			return Outcome{}, outrankedBy()
		}
		return ok(StateOpen)
	}
	return Outcome{}, refuse(ReasonInvalidBody, "unknown operation %q", op)
}

// Transitions lists, for the manifest, the targets each state may move to by
// a mark from someone with authority (the human may additionally re-mark any
// state), and by reopen.
func Transitions() map[State][]State {
	out := map[State][]State{}
	for _, from := range AllStates {
		// A proposed closed may still move to a side state; a confirmed one only reopens.
		for _, to := range AllStates {
			if to != StateOpen && step(Current{State: from}, to) {
				out[from] = append(out[from], to)
			}
		}
		if from == StateClosed || from.Side() {
			out[from] = append(out[from], StateOpen)
		}
		if out[from] == nil {
			out[from] = []State{}
		}
	}
	return out
}
