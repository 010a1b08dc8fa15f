package core

// Kind is a speech act: what a message does (decisions §3).
type Kind string

// The nine speech acts of the core.
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
)

// Act describes one speech act for the manifest: an agent can speak from it.
type Act struct {
	Kind   Kind   `json:"kind"`
	Does   string `json:"does"`
	Awaits string `json:"awaits"`
	Mark   string `json:"mark"`
}

// Acts is the table of decisions §3, in order.
var Acts = []Act{
	{KindAsk, "poses a question; without thread it opens a new one", "new thread: anyone but the sender (an open call); in a thread: the parent's author", "new thread: open"},
	{KindAnswer, "answers the question it replies to", "the author of the nearest ask at or above the parent", "proposes answered when the thread is open"},
	{KindClarify, "asks the parent's author to clarify", "the parent's author", ""},
	{KindInform, "adds facts or context; asks nothing", "nobody (clears awaiting when it named the sender)", ""},
	{KindPropose, "proposes a decision or a course of action", "the thread's creator (the parent's author if the sender is the creator)", ""},
	{KindObject, "disputes the parent, with reasons", "the parent's author", ""},
	{KindAck, "acknowledges; ends the sender's turn without inviting a reply", "nobody (clears awaiting when it named the sender)", ""},
	{KindDecide, "records the thread's decision", "nobody (clears awaiting)", "decided (needs authority over the thread)"},
	{KindEscalate, "hands the turn to a human (deadlock, risk, need for judgement)", "any human", ""},
}

func coreKind(k Kind) bool {
	for _, a := range Acts {
		if a.Kind == k {
			return true
		}
	}
	return false
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

// awaitingAfter applies decisions §3 to a thread's awaiting for a message of
// kind k sent by s. parentAuthor is the effective parent's author, askAuthor
// the author of the nearest ask at or above the parent, creator the thread's
// creator. newThread is true for the message that opens the thread.
// claimAuthor is the author of the claim a refute acts on.
func awaitingAfter(cur Awaiting, k Kind, s, parentAuthor, askAuthor, creator Party, newThread bool, claimAuthor ...Party) Awaiting {
	party := func(p Party) Awaiting {
		if p == s { // nobody waits on themselves
			return Awaiting{}
		}
		return Awaiting{Scope: AwaitParty, Party: p}
	}
	switch k {
	case KindAsk, KindAssert:
		if k == KindAssert && !newThread {
			break // in a thread an assert takes a turn like inform
		}
		if newThread {
			return Awaiting{Scope: AwaitAny, Party: s}
		}
		return party(parentAuthor)
	case KindAnswer:
		return party(askAuthor)
	case KindClarify, KindObject:
		return party(parentAuthor)
	case KindPropose:
		if s.Identity == creator.Identity {
			return party(parentAuthor)
		}
		return party(creator)
	case KindRefute:
		if len(claimAuthor) == 1 {
			return party(claimAuthor[0])
		}
	case KindDecide:
		return Awaiting{}
	case KindEscalate:
		return Awaiting{Scope: AwaitHuman}
	}
	// inform, ack, attest, verify, and assert within a thread: the sender
	// takes its turn without inviting a reply.
	if cur.names(s) {
		return Awaiting{}
	}
	return cur
}
