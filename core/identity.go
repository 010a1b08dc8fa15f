package core

import (
	"regexp"
	"slices"
	"strings"
)

// Right is one permission a token carries (docs/protocol.md §2).
type Right string

// The four rights.
const (
	RightRead   Right = "read"
	RightWrite  Right = "write"
	RightLock   Right = "lock"
	RightVerify Right = "verify"
)

// AllRights in manifest order.
var AllRights = []Right{RightRead, RightWrite, RightLock, RightVerify}

var handlePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// HumanPrefix starts every human identity.
const HumanPrefix = "human:"

// ValidHandle reports whether s is a valid handle, name or extension.
func ValidHandle(s string) bool { return handlePattern.MatchString(s) }

// ValidIdentity reports whether id is "<realm>:<handle>" for the given realm
// or "human:<name>".
func ValidIdentity(id, realm string) bool {
	prefix, handle, ok := strings.Cut(id, ":")
	if !ok || !ValidHandle(handle) {
		return false
	}
	return prefix == "human" || prefix == realm
}

// IsHuman reports whether the identity is a human's.
func IsHuman(identity string) bool { return strings.HasPrefix(identity, HumanPrefix) }

// ParseRights validates a list of right names.
func ParseRights(names []string) ([]Right, bool) {
	out := make([]Right, 0, len(names))
	for _, n := range names {
		r := Right(strings.TrimSpace(n))
		if !slices.Contains(AllRights, r) {
			return nil, false
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, true
}

// Caller is the authenticated party behind a request: who, and what its token
// allows. Rights hang on the token, never on the extension.
type Caller struct {
	Identity string
	Rights   []Right
	Label    string // the lock holder's label, shown as "KI · <label>"
	TokenID  string

	tokenHash string // the token's lookup key (subscriptions die with it)
}

// Human reports whether the caller is a human; a human has every right.
func (c Caller) Human() bool { return IsHuman(c.Identity) }

// Has reports whether the caller holds right r.
func (c Caller) Has(r Right) bool { return c.Human() || slices.Contains(c.Rights, r) }

// AuthorKind is "human" or "llm".
func (c Caller) AuthorKind() string {
	if c.Human() {
		return "human"
	}
	return "llm"
}

// Party is one (identity, extension) pair: the unit of turns and loop protection.
type Party struct {
	Identity  string `json:"identity"`
	Extension string `json:"extension"`
}
