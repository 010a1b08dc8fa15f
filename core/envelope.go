package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Provenance is the client's optional note of what produced a message.
type Provenance struct {
	Model  string `json:"model,omitempty"`
	Client string `json:"client,omitempty"`
}

// Envelope is one action as a client sends it, after validation (decisions §2).
// Server-set fields are not here: whatever a client sent for them was dropped.
type Envelope struct {
	Kind       Kind
	Thread     int64 // 0: none given
	Parent     int64 // 0: none given
	Extension  string
	Body       string
	Provenance *Provenance

	// Dialectic kinds only (decisions §7).
	Claim      int64 // attest, refute, verify: the claim acted on
	Evidence   []Evidence
	Supersedes []int64 // assert: claims it retires
	ValidUntil *time.Time
}

// wireEnvelope is the JSON shape accepted from clients. Server-set fields are
// declared so that they are accepted and dropped rather than refused as unknown.
type wireEnvelope struct {
	Parley     json.RawMessage `json:"parley"`
	Kind       *string         `json:"kind"`
	Thread     json.RawMessage `json:"thread"`
	Parent     json.RawMessage `json:"parent"`
	From       *wireFrom       `json:"from"`
	Body       *string         `json:"body"`
	Provenance *Provenance     `json:"provenance"`

	ID         json.RawMessage `json:"id"`
	AuthorKind json.RawMessage `json:"author_kind"`
	CreatedAt  json.RawMessage `json:"created_at"`

	// Fields of the dialectic kinds; on any other kind they are unknown.
	Claim      json.RawMessage `json:"claim"`
	Evidence   json.RawMessage `json:"evidence"`
	Supersedes json.RawMessage `json:"supersedes"`
	ValidUntil json.RawMessage `json:"valid_until"`
}

type wireFrom struct {
	Extension *string         `json:"extension"`
	Identity  json.RawMessage `json:"identity"` // server-set: dropped
}

// DecodeStrict decodes one JSON object into v, refusing unknown fields,
// trailing data and invalid UTF-8 with invalid_body naming the field.
func DecodeStrict(data []byte, v any) error {
	if !utf8.Valid(data) {
		return Invalid("body", "the request is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonRefusal(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Invalid("body", "the request holds more than one JSON value")
	}
	return nil
}

func jsonRefusal(err error) *Refusal {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return Invalid(field, "%s has the wrong type", field)
	case errors.As(err, &syntaxErr):
		return Invalid("body", "malformed JSON at offset %d", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		msg := fmt.Sprintf("unknown field %q", field)
		if field == "" {
			field = "body" // a key "" cannot name itself
		}
		return Invalid(field, "%s", msg)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("body", "the request is empty or truncated")
	}
	return Invalid("body", "malformed JSON")
}

// DecodeEnvelope validates a client's envelope against decisions §2 (and §7
// when the dialectic profile is on) and the limits.
func DecodeEnvelope(data []byte, lim Limits, dialectic bool) (Envelope, error) {
	var w wireEnvelope
	if err := DecodeStrict(data, &w); err != nil {
		return Envelope{}, err
	}
	var env Envelope
	if len(w.Parley) > 0 && string(w.Parley) != `"1"` {
		return env, Invalid("parley", `parley must be "1"`)
	}
	if w.Kind == nil || *w.Kind == "" {
		return env, Invalid("kind", "kind is required")
	}
	env.Kind = Kind(*w.Kind)
	if !coreKind(env.Kind) && !(dialectic && dialecticKind(env.Kind)) {
		return env, Invalid("kind", "this instance does not speak the kind %q", *w.Kind)
	}
	if err := decodeDialectic(&w, &env, lim); err != nil {
		return env, err
	}
	var err error
	if env.Thread, err = ParseRefJSON(w.Thread, "th_", "thread"); err != nil {
		return env, err
	}
	if env.Parent, err = ParseRefJSON(w.Parent, "msg_", "parent"); err != nil {
		return env, err
	}
	if w.From != nil && w.From.Extension != nil {
		env.Extension = *w.From.Extension
		if env.Extension != "" && !ValidHandle(env.Extension) {
			return env, Invalid("from.extension", "extension must match ^[a-z0-9][a-z0-9_-]{0,31}$")
		}
	}
	if w.Body == nil || strings.TrimSpace(*w.Body) == "" {
		return env, Invalid("body", "body is required and must not be blank")
	}
	env.Body = *w.Body
	if n := utf8.RuneCountInString(env.Body); n > lim.Body {
		return env, Invalid("body", "body has %d characters; the limit is %d", n, lim.Body).with("limit", lim.Body)
	}
	if strings.ContainsRune(env.Body, 0) {
		return env, Invalid("body", "body must not contain NUL characters")
	}
	if p := w.Provenance; p != nil {
		if utf8.RuneCountInString(p.Model) > lim.Provenance || strings.ContainsRune(p.Model, 0) {
			return env, Invalid("provenance.model", "provenance.model is limited to %d characters", lim.Provenance)
		}
		if utf8.RuneCountInString(p.Client) > lim.Provenance || strings.ContainsRune(p.Client, 0) {
			return env, Invalid("provenance.client", "provenance.client is limited to %d characters", lim.Provenance)
		}
		if p.Model != "" || p.Client != "" {
			env.Provenance = p
		}
	}
	if env.Thread == 0 && !opensThread(env.Kind) && env.Claim == 0 {
		return env, Invalid("thread", "%s needs a thread; only ask and assert open a new one", env.Kind)
	}
	if env.Thread == 0 && env.Parent != 0 {
		return env, Invalid("parent", "parent needs a thread")
	}
	return env, nil
}

func opensThread(k Kind) bool { return k == KindAsk || k == KindAssert }

// decodeDialectic reads claim, evidence, supersedes and valid_until: only on
// the dialectic kinds, and only those each kind takes.
func decodeDialectic(w *wireEnvelope, env *Envelope, lim Limits) error {
	fields := []struct {
		name    string
		raw     json.RawMessage
		allowed bool
	}{
		{"claim", w.Claim, env.Kind == KindAttest || env.Kind == KindRefute || env.Kind == KindVerify},
		{"evidence", w.Evidence, dialecticKind(env.Kind)},
		{"supersedes", w.Supersedes, env.Kind == KindAssert},
		{"valid_until", w.ValidUntil, env.Kind == KindAssert},
	}
	for _, f := range fields {
		if len(f.raw) > 0 && !f.allowed {
			return Invalid(f.name, "unknown field %q for kind %s", f.name, env.Kind)
		}
	}
	if !dialecticKind(env.Kind) {
		return nil
	}
	if env.Kind != KindAssert {
		if len(w.Claim) == 0 || string(w.Claim) == "null" {
			return Invalid("claim", "%s needs the claim it acts on", env.Kind)
		}
		id, err := ParseRefJSON(w.Claim, "cl_", "claim")
		if err != nil {
			return err
		}
		env.Claim = id
	}
	if len(w.Evidence) > 0 && string(w.Evidence) != "null" {
		if err := DecodeStrict(w.Evidence, &env.Evidence); err != nil {
			return Invalid("evidence", "evidence must be a list of {kind, ref, note?}")
		}
	}
	if err := validateEvidence(env.Evidence, env.Kind != KindVerify, lim); err != nil {
		return err
	}
	if len(w.Supersedes) > 0 && string(w.Supersedes) != "null" {
		var refs []json.RawMessage
		if err := json.Unmarshal(w.Supersedes, &refs); err != nil {
			return Invalid("supersedes", "supersedes must be a list of claim keys")
		}
		if len(refs) > lim.Supersedes {
			return Invalid("supersedes", "at most %d claims may be superseded at once", lim.Supersedes).with("limit", lim.Supersedes)
		}
		for _, r := range refs {
			id, err := ParseRefJSON(r, "cl_", "supersedes")
			if err != nil {
				return err
			}
			if slices.Contains(env.Supersedes, id) {
				return Invalid("supersedes", "%s is listed twice", ClaimKey(id))
			}
			env.Supersedes = append(env.Supersedes, id)
		}
	}
	if len(w.ValidUntil) > 0 && string(w.ValidUntil) != "null" {
		var s string
		t, err := time.Time{}, json.Unmarshal(w.ValidUntil, &s)
		if err == nil {
			t, err = time.Parse(time.RFC3339, s)
		}
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
