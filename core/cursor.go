package core

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Cursors are opaque to clients: base64url of "<kind>|<position>". A
// position is either a domain id (the last thread, message, event, claim or
// token handed out) or, for the feeds ordered by commit time, a position of
// the store's own making that only the store reads (ErrPosition when it did
// not issue it). A cursor has exactly one encoding and names the query it
// belongs to, so a client cannot forge look-alikes or use one elsewhere.

var positionPattern = regexp.MustCompile(`^[0-9A-Za-z#:_.-]{1,160}$`)

func encodeCursor(kind, pos string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "|" + pos))
}

// nextCursor is a listing's cursor: null at the end.
func nextCursor(kind, pos string) *string {
	if pos == "" {
		return nil
	}
	c := encodeCursor(kind, pos)
	return &c
}

// decodeCursor returns the position inside a cursor of the expected kind;
// "" for no cursor.
func decodeCursor(field, kind, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	bad := Invalid(field, "%s is not a cursor this server issued for this query", field)
	if len(cursor) > 256 {
		return "", bad
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil {
		return "", bad
	}
	k, pos, ok := strings.Cut(string(raw), "|")
	// Exactly one encoding per cursor (the decoder skips newlines, so check).
	if !ok || k != kind || !positionPattern.MatchString(pos) || encodeCursor(kind, pos) != cursor {
		return "", bad
	}
	return pos, nil
}

// decodeIDCursor returns the id inside a cursor whose position is an id; 0
// for no cursor.
func decodeIDCursor(field, kind, cursor string) (int64, error) {
	pos, err := decodeCursor(field, kind, cursor)
	if err != nil || pos == "" {
		return 0, err
	}
	id, err := ParseRef(pos, "", field)
	if err != nil {
		return 0, Invalid(field, "%s is not a cursor this server issued for this query", field)
	}
	return id, nil
}

func idPosition(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// positionError turns the store's ErrPosition into the client's refusal.
func positionError(field string, err error) error {
	if errors.Is(err, ErrPosition) {
		return Invalid(field, "%s is not a cursor this server issued for this query", field)
	}
	return err
}
