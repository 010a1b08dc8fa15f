package core

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// Cursors are opaque to clients: base64url of "<kind>|<position>". The
// position is a key value of the store's index (never a raw
// LastEvaluatedKey), so it stays valid when items move. Each kind has a strict
// pattern; anything else is refused as invalid_body.
var cursorPatterns = map[string]*regexp.Regexp{
	"threads": regexp.MustCompile(`^[0-9]{12}$`),
	"claims":  regexp.MustCompile(`^[0-9]{12}$`),
	"tevents": regexp.MustCompile(`^[0-9]{12}:[0-9]{10}$`),
	"events":  regexp.MustCompile(`^[0-9]{13}#[0-9]{12}#[0-9]{10}$`),
	"inbox":   regexp.MustCompile(`^[0-9]{13}#[0-9]{12}#[0-9]{10}$`),
}

func encodeCursor(kind, pos string) string {
	if pos == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "|" + pos))
}

// decodeCursor returns the position inside a cursor of the expected kind.
func decodeCursor(field, kind, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	// Strict: a cursor has exactly one encoding, so a client cannot forge
	// look-alikes of one it was given.
	raw, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil || len(cursor) > 128 {
		return "", Invalid(field, "%s is not a cursor this server issued", field)
	}
	k, pos, ok := strings.Cut(string(raw), "|")
	// Exactly one encoding per cursor (the decoder skips newlines, so check).
	if !ok || k != kind || !cursorPatterns[kind].MatchString(pos) || encodeCursor(kind, pos) != cursor {
		return "", Invalid(field, "%s is not a cursor this server issued for this query", field)
	}
	return pos, nil
}
