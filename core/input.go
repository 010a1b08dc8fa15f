package core

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Strict input (docs/protocol.md §3.3): one decoder for every operation's input on
// both transports. Names match exactly (Kind is not kind), a name given
// twice is refused, unknown names are refused, and the JSON must be one
// valid UTF-8 value. The refusal names the field at fault.

// DecodeStrict decodes one JSON value into v under those rules.
func DecodeStrict(data []byte, v any) error {
	if !utf8.Valid(data) {
		return Invalid("body", "the request is not valid UTF-8")
	}
	err := json.Unmarshal(data, v, json.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	return jsonRefusal(err)
}

// errMessage lets a field's own decoder say what is wrong; the refusal
// prefixes the field's name.
type errMessage string

func (e errMessage) Error() string { return string(e) }

func jsonRefusal(err error) *Refusal {
	if r, ok := errors.AsType[*Refusal](err); ok {
		return r
	}
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		if errors.Is(se.Err, jsontext.ErrDuplicateName) {
			field := fieldOf(se.JSONPointer)
			return Invalid(field, "%s is given twice; every name may appear once", field)
		}
		return Invalid("body", "malformed JSON at byte %d", se.ByteOffset)
	}
	if se, ok := errors.AsType[*json.SemanticError](err); ok {
		field := fieldOf(se.JSONPointer)
		if errors.Is(se.Err, json.ErrUnknownName) {
			return Invalid(field, "unknown field %q (names are case-sensitive)", se.JSONPointer.LastToken())
		}
		if m, ok := errors.AsType[errMessage](se.Err); ok {
			return Invalid(field, "%s %s", field, string(m))
		}
		return Invalid(field, "%s has the wrong type", field)
	}
	return Invalid("body", "malformed JSON")
}

// fieldOf turns a JSON pointer into the field name refusals use:
// /from/extension → from.extension, /evidence/0/ref → evidence[0].ref.
func fieldOf(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			fmt.Fprintf(&b, "[%s]", tok)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// Ref is a reference given as the key ("th_1042"), the plain number
// (1042) or the number as a string ("1042"). Each kind of reference is its
// own type so that a decoder knows its prefix.
type (
	ThreadRef  int64
	MessageRef int64
	ClaimRef   int64
)

func (r *ThreadRef) UnmarshalJSON(b []byte) error  { return unmarshalRef(b, "th_", (*int64)(r)) }
func (r *MessageRef) UnmarshalJSON(b []byte) error { return unmarshalRef(b, "msg_", (*int64)(r)) }
func (r *ClaimRef) UnmarshalJSON(b []byte) error   { return unmarshalRef(b, "cl_", (*int64)(r)) }

func unmarshalRef(b []byte, prefix string, out *int64) error {
	if string(b) == "null" {
		*out = 0
		return nil
	}
	n, err := ParseRefJSON(b, prefix, "ref")
	if err != nil {
		return errMessage(fmt.Sprintf("must be %sN or a positive number", prefix))
	}
	*out = n
	return nil
}

// PageLimit is a page size: absent means the default; given, it is a whole
// number from 1 (larger than the maximum reads as the maximum).
type PageLimit int

func (l *PageLimit) UnmarshalJSON(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 1 {
		return errMessage("must be a whole number from 1")
	}
	*l = PageLimit(n)
	return nil
}

// checkText applies the text rules to a field: no control characters but
// newline and tab, no bidirectional override or isolate characters.
func checkText(field, s string) error {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			return Invalid(field, "%s holds a control character (U+%04X); only newline and tab are allowed", field, r)
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return Invalid(field, "%s holds a bidirectional override character (U+%04X)", field, r)
		}
	}
	return nil
}

// visible reports whether s holds a character that shows: not white space
// and not a format character such as U+200B.
func visible(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) && r != utf8.RuneError {
			return true
		}
	}
	return false
}
