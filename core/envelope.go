package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Provenance is the client's optional note of what produced a message.
type Provenance struct {
	Model  string `json:"model,omitempty"`
	Client string `json:"client,omitempty"`
}

// Envelope is one action as a client sends it, after validation (docs/protocol.md §3).
// Server-set fields are not here: whatever a client sent for them was dropped.
type Envelope struct {
	Kind       Kind
	Thread     int64 // 0: none given
	Parent     int64 // 0: none given
	Extension  string
	Body       string
	Provenance *Provenance

	// Dialectic kinds only (docs/protocol.md §11).
	Claim      int64 // attest, refute, verify: the claim acted on
	Evidence   []Evidence
	Supersedes []int64 // assert: claims it retires
	ValidUntil *time.Time
}

// WireEnvelope is the JSON shape accepted from clients (and, with
// IdempotencyKey, post's whole input). Server-set fields are declared so
// that they are accepted and dropped rather than refused as unknown.
type WireEnvelope struct {
	Parley     *string        `json:"parley" doc:"protocol version; if given it must be \"1\""`
	Kind       *Kind          `json:"kind" required:"true" doc:"the speech act (see the manifest's acts)"`
	Thread     *ThreadRef     `json:"thread" doc:"the thread to post into: th_N or N; without it, ask (and assert) open a new thread"`
	Parent     *MessageRef    `json:"parent" doc:"the message replied to: msg_N or N; omitted means the thread's root message"`
	From       *WireFrom      `json:"from" doc:"who within the token's identity speaks"`
	Body       *string        `json:"body" required:"true" doc:"the message: at most 500 characters, at least one of them visible"`
	Provenance *Provenance    `json:"provenance" doc:"optional: the model and client that produced the message, at most 128 characters each"`
	ID         jsontext.Value `json:"id" ignored:"true"`
	AuthorKind jsontext.Value `json:"author_kind" ignored:"true"`
	CreatedAt  jsontext.Value `json:"created_at" ignored:"true"`

	// Fields of the dialectic kinds; on any other kind they are unknown.
	Claim      *ClaimRef   `json:"claim" profile:"dialectic" doc:"attest, refute, verify: the claim acted on (cl_N or N); thread and parent default to the claim's"`
	Evidence   *[]Evidence `json:"evidence" profile:"dialectic" doc:"dialectic kinds: pointers {kind, ref, note?}, at most 8; required for assert, attest and refute"`
	Supersedes *[]ClaimRef `json:"supersedes" profile:"dialectic" doc:"assert: the claims (cl_N) this claim replaces; yours, or on threads you have authority over"`
	ValidUntil *string     `json:"valid_until" profile:"dialectic" doc:"assert: RFC 3339 time after which the claim reads as expired"`

	// IdempotencyKey is post's key: the HTTP header Idempotency-Key, the
	// MCP argument idempotency_key.
	IdempotencyKey *string `json:"idempotency_key" in:"header" header:"Idempotency-Key" doc:"optional, 1 to 128 printable characters: a retry with the same key and request returns the first result and posts nothing new"`
}

// WireFrom is the envelope's from: only the extension is the client's.
type WireFrom struct {
	Extension *string        `json:"extension" doc:"sub-agent name, ^[a-z0-9][a-z0-9_-]{0,31}$; loop protection is per (identity, extension)"`
	Identity  jsontext.Value `json:"identity" ignored:"true"` // server-set: dropped
}

// DecodeEnvelope validates a client's envelope against docs/protocol.md §3
// (strict input: §3.3), §11 and the limits. It also returns the idempotency
// key, if any.
func DecodeEnvelope(data []byte, lim Limits, dialectic bool) (Envelope, string, error) {
	var w WireEnvelope
	if len(data) == 0 {
		return Envelope{}, "", Invalid("body", "the request body must be the envelope, a JSON object")
	}
	if err := DecodeStrict(data, &w); err != nil {
		return Envelope{}, "", err
	}
	var env Envelope
	key := ""
	if w.IdempotencyKey != nil {
		key = *w.IdempotencyKey
		if key == "" {
			return env, "", Invalid("idempotency_key", "the idempotency key must be 1 to %d printable characters", lim.IdempotencyKey)
		}
	}
	if w.Parley != nil && *w.Parley != "1" {
		return env, "", Invalid("parley", `parley must be "1"`)
	}
	if w.Kind == nil || *w.Kind == "" {
		return env, "", Invalid("kind", "kind is required")
	}
	act, ok := actOf(*w.Kind, dialectic)
	if !ok {
		return env, "", Invalid("kind", "this instance does not speak the kind %q", *w.Kind)
	}
	env.Kind = act.Kind
	if err := decodeDialectic(&w, &env, act, lim); err != nil {
		return env, "", err
	}
	if w.Thread != nil {
		env.Thread = int64(*w.Thread)
	}
	if w.Parent != nil {
		env.Parent = int64(*w.Parent)
	}
	if w.From != nil && w.From.Extension != nil {
		env.Extension = *w.From.Extension
		if env.Extension != "" && !ValidHandle(env.Extension) {
			return env, "", Invalid("from.extension", "extension must match ^[a-z0-9][a-z0-9_-]{0,31}$")
		}
	}
	if w.Body == nil {
		return env, "", Invalid("body", "body is required")
	}
	env.Body = *w.Body
	if err := checkText("body", env.Body); err != nil {
		return env, "", err
	}
	if !visible(env.Body) {
		return env, "", Invalid("body", "body must hold at least one visible character")
	}
	if n := utf8.RuneCountInString(env.Body); n > lim.Body {
		return env, "", Invalid("body", "body has %d characters; the limit is %d", n, lim.Body).with("limit", lim.Body)
	}
	if p := w.Provenance; p != nil {
		for _, f := range []struct{ name, v string }{{"provenance.model", p.Model}, {"provenance.client", p.Client}} {
			if utf8.RuneCountInString(f.v) > lim.Provenance {
				return env, "", Invalid(f.name, "%s is limited to %d characters", f.name, lim.Provenance)
			}
			if err := checkText(f.name, f.v); err != nil {
				return env, "", err
			}
		}
		if p.Model != "" || p.Client != "" {
			env.Provenance = p
		}
	}
	if env.Thread == 0 && !act.Opens && env.Claim == 0 {
		return env, "", Invalid("thread", "%s needs a thread; only ask and assert open a new one", env.Kind)
	}
	if env.Thread == 0 && env.Parent != 0 {
		return env, "", Invalid("parent", "parent needs a thread")
	}
	return env, key, nil
}

// decodeDialectic reads claim, evidence, supersedes and valid_until: only
// on the acts that take them.
func decodeDialectic(w *WireEnvelope, env *Envelope, act Act, lim Limits) error {
	fields := []struct {
		name    string
		given   bool
		allowed bool
	}{
		{"claim", w.Claim != nil, act.Claim == ClaimActsOn},
		{"evidence", w.Evidence != nil, act.Claim != ClaimNone},
		{"supersedes", w.Supersedes != nil, act.Claim == ClaimMakes},
		{"valid_until", w.ValidUntil != nil, act.Claim == ClaimMakes},
	}
	for _, f := range fields {
		if f.given && !f.allowed {
			return Invalid(f.name, "unknown field %q for kind %s", f.name, env.Kind)
		}
	}
	if act.Claim == ClaimNone {
		return nil
	}
	if act.Claim == ClaimActsOn {
		if w.Claim == nil || *w.Claim == 0 {
			return Invalid("claim", "%s needs the claim it acts on", env.Kind)
		}
		env.Claim = int64(*w.Claim)
	}
	if w.Evidence != nil {
		env.Evidence = *w.Evidence
	}
	if err := validateEvidence(env.Evidence, act.Evidence, lim); err != nil {
		return err
	}
	if w.Supersedes != nil {
		if len(*w.Supersedes) > lim.Supersedes {
			return Invalid("supersedes", "at most %d claims may be superseded at once", lim.Supersedes).with("limit", lim.Supersedes)
		}
		for _, r := range *w.Supersedes {
			id := int64(r)
			if id == 0 || slices.Contains(env.Supersedes, id) {
				return Invalid("supersedes", "supersedes lists each claim (cl_N) once")
			}
			env.Supersedes = append(env.Supersedes, id)
		}
	}
	if w.ValidUntil != nil {
		t, err := time.Parse(time.RFC3339, *w.ValidUntil)
		if err != nil {
			return Invalid("valid_until", "valid_until must be an RFC 3339 time")
		}
		t = t.UTC()
		env.ValidUntil = &t
	}
	return nil
}

// maxRef keeps ids within the 15 digits the store pads them to (message ids are thread × 10⁴ + ordinal).
const maxRef = 999_999_999_999_999

// ParseRefJSON accepts a key ("th_1042"), a number (1042) or a numeric
// string ("1042"); absent or null gives 0.
func ParseRefJSON(raw json.RawMessage, prefix, field string) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, Invalid(field, "%s is not a valid reference", field)
		}
		return ParseRef(s, prefix, field)
	}
	return ParseRef(string(raw), "", field)
}

// ParseRef parses a reference given as "<prefix>N" or "N". N is a positive
// decimal integer without sign, spaces or leading zeros.
func ParseRef(s, prefix, field string) (int64, error) {
	digits := s
	if prefix != "" {
		digits = strings.TrimPrefix(s, prefix)
	}
	if digits == "" || len(digits) > 15 || digits[0] == '0' {
		return 0, Invalid(field, "%s must be %sN or a positive number", field, prefix)
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, Invalid(field, "%s must be %sN or a positive number", field, prefix)
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || n > maxRef {
		return 0, Invalid(field, "%s is out of range", field)
	}
	return n, nil
}

// ThreadKey, MessageKey and ClaimKey give the opaque keys of ids.
func ThreadKey(n int64) string  { return fmt.Sprintf("th_%d", n) }
func MessageKey(n int64) string { return fmt.Sprintf("msg_%d", n) }
