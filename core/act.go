package core

import "slices"

// Kind is a speech act: what a message does.
type Kind string

// The nine speech acts of the core, and the four of the dialectic profile.
const (
	KindAsk      Kind = "ask"
	KindAnswer   Kind = "answer"
	KindClarify  Kind = "clarify"
	KindInform   Kind = "inform"
	KindPropose  Kind = "propose"
	KindObject   Kind = "object"
	KindAck      Kind = "ack"
	KindDecide   Kind = "decide"
	KindEscalate Kind = "escalate"

	KindAssert Kind = "assert"
	KindAttest Kind = "attest"
	KindRefute Kind = "refute"
	KindVerify Kind = "verify"
)

// Await is whom an act makes the thread wait on.
type Await int

const (
	// AwaitKeep: the sender takes its turn without inviting a reply; a
	// call to the sender itself is answered (cleared), any other stays.
	AwaitKeep        Await = iota
	AwaitNobody            // clears awaiting
	AwaitOpenCall          // anyone but the sender (the thread's first message)
	AwaitParent            // the parent's author
	AwaitAsker             // the author of the nearest ask at or above the parent
	AwaitCreator           // the thread's creator (the parent's author if the sender is the creator)
	AwaitClaimAuthor       // the author of the claim acted on
	AwaitAnyHuman          // any human
)

// ClaimUse is what a dialectic act does with claims.
type ClaimUse int

const (
	ClaimNone   ClaimUse = iota
	ClaimMakes           // assert: creates a claim, may supersede others
	ClaimActsOn          // attest, refute, verify: names the claim it acts on
)

// Act is one speech act as data: the manifest, the tool descriptions, the
// envelope decoder, the awaiting rule, the marks and loop damping all read
// this table, and nothing else decides per kind.
type Act struct {
	Kind    Kind   `json:"kind"`
	Does    string `json:"does"`
	Awaits  string `json:"awaits"`
	Mark    string `json:"mark"`
	Profile string `json:"profile,omitempty"`

	Opens     bool     `json:"opens_thread"`   // without thread it opens one
	OnOpen    Await    `json:"-"`              // whom it awaits when it opens a thread
	InThread  Await    `json:"-"`              // whom it awaits in a thread
	Marks     Op       `json:"-"`              // the state change it carries (OpAnswer, OpDecide) or ""
	Exempt    bool     `json:"damping_exempt"` // accepted past the exchange and run limits
	Claim     ClaimUse `json:"-"`
	Evidence  bool     `json:"evidence_required,omitempty"`
	NeedRight Right    `json:"right,omitempty"` // a right beyond write
}

// Acts is the table of every act this server knows, core first.
var Acts = []Act{
	{Kind: KindAsk, Does: "poses a question; without thread it opens a new one",
		Awaits: "new thread: anyone but the sender (an open call); in a thread: the parent's author", Mark: "new thread: open",
		Opens: true, OnOpen: AwaitOpenCall, InThread: AwaitParent},
	{Kind: KindAnswer, Does: "answers the question it replies to",
		Awaits: "the author of the nearest ask at or above the parent", Mark: "proposes answered when the thread is open",
		InThread: AwaitAsker, Marks: OpAnswer},
	{Kind: KindClarify, Does: "asks the parent's author to clarify", Awaits: "the parent's author", InThread: AwaitParent},
	{Kind: KindInform, Does: "adds facts or context; asks nothing",
		Awaits: "nobody: it ends the sender's turn (a call to the sender is answered; any other call stays)", InThread: AwaitKeep},
	{Kind: KindPropose, Does: "proposes a decision or a course of action",
		Awaits: "the thread's creator (the parent's author if the sender is the creator)", InThread: AwaitCreator},
	{Kind: KindObject, Does: "disputes the parent, with reasons", Awaits: "the parent's author", InThread: AwaitParent},
	{Kind: KindAck, Does: "acknowledges; ends the sender's turn without inviting a reply",
		Awaits: "nobody: it ends the sender's turn (a call to the sender is answered; any other call stays)", InThread: AwaitKeep, Exempt: true},
	{Kind: KindDecide, Does: "records the thread's decision", Awaits: "nobody (clears awaiting)",
		Mark: "decided (needs authority over the thread)", InThread: AwaitNobody, Marks: OpDecide, Exempt: true},
	{Kind: KindEscalate, Does: "hands the turn to a human (deadlock, risk, need for judgement)", Awaits: "any human",
		InThread: AwaitAnyHuman, Exempt: true},

	{Kind: KindAssert, Profile: ProfileDialectic, Does: "states a claim with evidence; without thread it opens one; supersedes may retire earlier claims",
		Awaits: "new thread: anyone but the sender; in a thread: like inform", Mark: "new claim: unverified; superseded claims: superseded",
		Opens: true, OnOpen: AwaitOpenCall, InThread: AwaitKeep, Claim: ClaimMakes, Evidence: true},
	{Kind: KindAttest, Profile: ProfileDialectic, Does: "supports a claim with further evidence (not one's own)",
		Awaits: "nobody: it ends the sender's turn", Mark: "claim: unverified → supported",
		InThread: AwaitKeep, Claim: ClaimActsOn, Evidence: true},
	{Kind: KindRefute, Profile: ProfileDialectic, Does: "refutes a claim with counter-evidence; a verified claim can still fall",
		Awaits: "the claim's author", Mark: "claim: any but superseded → refuted",
		InThread: AwaitClaimAuthor, Claim: ClaimActsOn, Evidence: true},
	{Kind: KindVerify, Profile: ProfileDialectic, Does: "the verifier's seal (needs the verify right; not one's own claim)",
		Awaits: "nobody: it ends the sender's turn", Mark: "claim: supported → verified",
		InThread: AwaitKeep, Claim: ClaimActsOn, NeedRight: RightVerify},
}

// actOf finds a kind's act among those the given profiles speak.
func actOf(k Kind, dialectic bool) (Act, bool) {
	i := slices.IndexFunc(Acts, func(a Act) bool { return a.Kind == k })
	if i < 0 || (Acts[i].Profile == ProfileDialectic && !dialectic) {
		return Act{}, false
	}
	return Acts[i], true
}

// kindsOf lists the kinds of a profile ("" for the core).
func kindsOf(profile string) []Kind {
	var out []Kind
	for _, a := range Acts {
		if a.Profile == profile {
			out = append(out, a.Kind)
		}
	}
	return out
}

// rule is whom the act awaits where it is posted.
func (a Act) rule(newThread bool) Await {
	if newThread {
		return a.OnOpen
	}
	return a.InThread
}

// expectsReply reports whether the act sets awaiting anew.
func (a Act) expectsReply(newThread bool) bool {
	r := a.rule(newThread)
	return r != AwaitKeep && r != AwaitNobody
}

// AwaitScope says whom a thread waits on.
type AwaitScope string

// The four values of awaiting.
const (
	AwaitNone  AwaitScope = ""
	AwaitParty AwaitScope = "party" // one (identity, extension)
	AwaitAny   AwaitScope = "any"   // everyone but the party that opened the call
	AwaitHuman AwaitScope = "human" // any human
)

// Awaiting is who is due in a thread. There is one value per thread.
type Awaiting struct {
	Scope AwaitScope
	// Party is the awaited party (AwaitParty) or the one that opened the call
	// and is excluded from it (AwaitAny).
	Party Party
}

// names reports whether p is among those the awaiting value names.
func (a Awaiting) names(p Party) bool {
	switch a.Scope {
	case AwaitParty:
		return a.Party == p
	case AwaitAny:
		return a.Party != p
	case AwaitHuman:
		return IsHuman(p.Identity)
	}
	return false
}

// turnParties are the parties an act's awaiting rule may name.
type turnParties struct {
	sender, parent, asker, creator, claimAuthor Party
}

// awaitingAfter applies an act's rule to a thread's awaiting
// (docs/protocol.md §4.2). An open call (any) is replaced only by an act that expects a
// reply; an act that takes a turn without inviting one answers a call to
// its sender and leaves any other.
func awaitingAfter(cur Awaiting, act Act, newThread bool, p turnParties) Awaiting {
	party := func(to Party) Awaiting {
		if to == p.sender { // nobody waits on themselves
			return Awaiting{}
		}
		return Awaiting{Scope: AwaitParty, Party: to}
	}
	switch act.rule(newThread) {
	case AwaitNobody:
		return Awaiting{}
	case AwaitOpenCall:
		return Awaiting{Scope: AwaitAny, Party: p.sender}
	case AwaitParent:
		return party(p.parent)
	case AwaitAsker:
		return party(p.asker)
	case AwaitCreator:
		if p.sender.Identity == p.creator.Identity {
			return party(p.parent)
		}
		return party(p.creator)
	case AwaitClaimAuthor:
		return party(p.claimAuthor)
	case AwaitAnyHuman:
		return Awaiting{Scope: AwaitHuman}
	}
	// AwaitKeep: the sender takes its turn. An open call stays open (only a
	// reply that expects one replaces it); a call to the sender is answered.
	if cur.Scope != AwaitAny && cur.names(p.sender) {
		return Awaiting{}
	}
	return cur
}
