package core

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// The dialectic profile (docs/protocol.md §11): claims that carry evidence,
// attestations, refutations with counter-evidence, and a verifier's seal.
const ProfileDialectic = "dialectic"

// ClaimState is a claim's standing.
type ClaimState string

// The five claim states.
const (
	ClaimUnverified ClaimState = "unverified"
	ClaimSupported  ClaimState = "supported"
	ClaimVerified   ClaimState = "verified"
	ClaimRefuted    ClaimState = "refuted"
	ClaimSuperseded ClaimState = "superseded"
)

// ClaimStates in manifest order.
var ClaimStates = []ClaimState{ClaimUnverified, ClaimSupported, ClaimVerified, ClaimRefuted, ClaimSuperseded}

// Valid reports whether s names a claim state.
func (s ClaimState) Valid() bool { return slices.Contains(ClaimStates, s) }

// EvidenceKinds are the kinds of pointer evidence may be.
var EvidenceKinds = []string{"url", "hash", "artifact", "commit", "log", "reproducer", "note", "other"}

// Evidence is a pointer, never an opinion.
type Evidence struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
	Note string `json:"note,omitempty"`
}

// ClaimStep is the claim transition table: what an act (or a supersession,
// kind "supersede") does to a claim in state from.
func ClaimStep(kind Kind, from ClaimState) (ClaimState, error) {
	bad := func() (ClaimState, error) {
		return from, refuse(ReasonInvalidTransition, "a %s claim cannot be %s", from, pastTense(kind)).with("from", from).with("kind", kind)
	}
	if from == ClaimSuperseded {
		return bad()
	}
	switch kind {
	case KindAttest:
		switch from {
		case ClaimUnverified:
			return ClaimSupported, nil
		case ClaimSupported, ClaimVerified:
			return from, nil
		}
	case KindVerify:
		if from == ClaimSupported {
			return ClaimVerified, nil
		}
	case KindRefute:
		return ClaimRefuted, nil // the Popperian asymmetry: verified falls too
	case kindSupersede:
		if from == ClaimRefuted {
			return ClaimRefuted, nil // a refutation stays on the record (docs/protocol.md §11)
		}
		return ClaimSuperseded, nil
	}
	return bad()
}

// kindSupersede is not a speech act: it is what an assert's supersedes does
// to each claim it names.
const kindSupersede Kind = "supersede"

func pastTense(k Kind) string {
	switch k {
	case KindAttest:
		return "attested"
	case KindVerify:
		return "verified"
	case KindRefute:
		return "refuted"
	}
	return "superseded"
}

// Claim is a statement with evidence, born from an assert message.
type Claim struct {
	ID            int64
	Thread        int64
	ThreadCreator string // denormalised: who has authority over the claim's thread
	Message       int64  // the assert message
	Author        Party
	Body          string
	Evidence      []Evidence
	ValidUntil    *time.Time
	State         ClaimState
	Version       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Supersedes    []int64
	SupersededBy  int64
}

// ClaimRecord is one entry of a claim's history: an attestation,
// refutation, verification or supersession. Never rewritten.
type ClaimRecord struct {
	Claim    int64
	Seq      int64 // the claim's version after it
	Kind     Kind
	Actor    Party
	At       time.Time
	Evidence []Evidence
	Message  int64 // the message that did it
	From, To ClaimState
}

// ClaimKey gives a claim's opaque key.
func ClaimKey(n int64) string { return fmt.Sprintf("cl_%d", n) }

// validateEvidence applies docs/protocol.md §11's evidence rules.
func validateEvidence(ev []Evidence, required bool, lim Limits) error {
	if required && len(ev) == 0 {
		return Invalid("evidence", "this kind needs at least one evidence item").with("rule", "missing")
	}
	if len(ev) > lim.EvidenceItems {
		return Invalid("evidence", "at most %d evidence items", lim.EvidenceItems).with("rule", "too_many").with("limit", lim.EvidenceItems)
	}
	for i, e := range ev {
		at := fmt.Sprintf("evidence[%d]", i)
		switch {
		case !slices.Contains(EvidenceKinds, e.Kind):
			return Invalid(at+".kind", "evidence kind must be one of url, hash, artifact, commit, log, reproducer, note, other").with("rule", "kind")
		case e.Ref == "" || utf8.RuneCountInString(e.Ref) > lim.EvidenceRef:
			return Invalid(at+".ref", "evidence ref must be 1 to %d characters", lim.EvidenceRef).with("rule", "too_long").with("limit", lim.EvidenceRef)
		case utf8.RuneCountInString(e.Note) > lim.EvidenceNote:
			return Invalid(at+".note", "evidence note is limited to %d characters", lim.EvidenceNote).with("rule", "too_long").with("limit", lim.EvidenceNote)
		}
		if err := checkText(at+".ref", e.Ref); err != nil {
			return err
		}
		if err := checkText(at+".note", e.Note); err != nil {
			return err
		}
	}
	return nil
}
