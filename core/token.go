package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Token is a stored bearer token. The secret itself is never stored: only
// its SHA-256, which is also how it is looked up.
type Token struct {
	ID        string // "tk_" + the first 12 hex digits of the hash; safe to show
	Hash      string
	Identity  string
	Rights    []Right
	Label     string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// TokenPrefix starts every secret Parley issues, so leaked ones are easy to scan for.
const TokenPrefix = "pt_"

// HashToken gives the lookup hash of a secret.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// TokenID derives the public id from the hash.
func TokenID(hash string) string { return "tk_" + hash[:12] }

// NewSecret returns a fresh secret with 256 bits of randomness.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return TokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])), nil
}

// TokenSpec is what an operator asks for when creating a token.
type TokenSpec struct {
	Identity string
	Rights   []string
	Label    string
}

// validate checks a spec against the realm.
func (s TokenSpec) validate(realm string) ([]Right, error) {
	if !ValidIdentity(s.Identity, realm) {
		return nil, Invalid("identity", "identity must be %s:<handle> or human:<name>, handle matching ^[a-z0-9][a-z0-9_-]{0,31}$", realm)
	}
	rights, ok := ParseRights(s.Rights)
	if !ok {
		return nil, Invalid("rights", "rights are read, write, lock and verify")
	}
	if IsHuman(s.Identity) {
		rights = append([]Right(nil), AllRights...) // a human implies every right
	}
	if utf8.RuneCountInString(s.Label) > 32 {
		return nil, Invalid("label", "label is limited to 32 characters")
	}
	if err := checkText("label", s.Label); err != nil {
		return nil, err
	}
	return rights, nil
}

// CreateToken issues a new token and returns its secret, once. It is the
// operator's path (the CLI with AWS credentials, the local demo); over the
// API, IssueToken checks that a human asks.
func (s *Service) CreateToken(ctx context.Context, spec TokenSpec) (string, Token, error) {
	secret, err := NewSecret()
	if err != nil {
		return "", Token{}, err
	}
	t, err := s.ImportToken(ctx, secret, spec)
	return secret, t, err
}

// ImportToken stores a token whose secret the operator chose (a tokens
// file). A token that is stored already is left as it is — a revoked one
// stays revoked however often the file is loaded.
func (s *Service) ImportToken(ctx context.Context, secret string, spec TokenSpec) (Token, error) {
	if len(secret) < 16 {
		return Token{}, Invalid("token", "a token must be at least 16 characters")
	}
	rights, err := spec.validate(s.realm)
	if err != nil {
		return Token{}, err
	}
	h := HashToken(secret)
	t := Token{ID: TokenID(h), Hash: h, Identity: spec.Identity, Rights: rights, Label: spec.Label, CreatedAt: s.clock.Now().UTC()}
	stored, err := s.store.PutToken(ctx, t)
	if errors.Is(err, ErrExists) {
		return stored, nil
	}
	return stored, err
}

// CreateTokenInput is create_token's input.
type CreateTokenInput struct {
	Identity string   `json:"identity" required:"true" doc:"<realm>:<handle> for an agent, human:<name> for a human"`
	Rights   []string `json:"rights" doc:"any of read, write, lock, verify (a human holds every right)"`
	Label    string   `json:"label" doc:"the lock holder's label, shown as KI · <label>; at most 32 characters"`
}

// IssueToken is create_token (docs/protocol.md §7): a human mints a token for
// an identity of this realm or a human; the secret is in the answer once.
//
// Refusals: token_right_missing, invalid_body, unavailable.
func (s *Service) IssueToken(ctx context.Context, c Caller, in CreateTokenInput) (NewToken, error) {
	secret, t, err := s.CreateToken(ctx, TokenSpec{Identity: in.Identity, Rights: in.Rights, Label: in.Label})
	if err != nil {
		return NewToken{}, err
	}
	return NewToken{TokenView: viewToken(t), Secret: secret}, nil
}

// ListTokensInput is list_tokens' input.
type ListTokensInput struct {
	Cursor string    `json:"cursor" doc:"the cursor of the previous page, to continue"`
	Limit  PageLimit `json:"limit" doc:"page size, default 50, at most 200"`
}

// ListTokens is list_tokens: every token, revoked ones included, in id
// order; never a secret or a hash.
//
// Refusals: token_right_missing, invalid_body, unavailable.
func (s *Service) ListTokens(ctx context.Context, c Caller, in ListTokensInput) (TokenPage, error) {
	return s.TokenPage(ctx, in)
}

// TokenPage lists tokens for the operator (no caller).
func (s *Service) TokenPage(ctx context.Context, q ListTokensInput) (TokenPage, error) {
	pos, err := decodeCursor("cursor", "tokens", q.Cursor)
	if err != nil {
		return TokenPage{}, err
	}
	ts, next, err := s.store.Tokens(ctx, TokenQuery{After: pos, Limit: s.page(int(q.Limit))})
	if err != nil {
		return TokenPage{}, err
	}
	page := TokenPage{Tokens: make([]TokenView, 0, len(ts)), Cursor: nextCursor("tokens", next)}
	for _, t := range ts {
		page.Tokens = append(page.Tokens, viewToken(t))
	}
	return page, nil
}

// RevokeTokenInput is revoke_token's input.
type RevokeTokenInput struct {
	ID string `json:"id" in:"path" required:"true" doc:"the token's id: tk_ and 12 hex digits"`
}

// Revoke is revoke_token: a human revokes a token by its id. It stops
// working everywhere within the token cache time.
//
// Refusals: token_right_missing, invalid_body, token_not_found, unavailable.
func (s *Service) Revoke(ctx context.Context, c Caller, q RevokeTokenInput) (TokenView, error) {
	if !tokenIDPattern.MatchString(q.ID) {
		return TokenView{}, Invalid("id", "a token id is tk_ and 12 hex digits")
	}
	t, err := s.RevokeToken(ctx, q.ID)
	if errors.Is(err, ErrNotFound) {
		return TokenView{}, refuse(ReasonTokenNotFound, "there is no token %s", q.ID).with("id", q.ID)
	}
	return viewToken(t), err
}

var tokenIDPattern = regexp.MustCompile(`^tk_[0-9a-f]{12}$`)

// RevokeToken revokes the one token whose id starts with idOrPrefix (the
// operator's path; "tk_" may be left out).
func (s *Service) RevokeToken(ctx context.Context, idOrPrefix string) (Token, error) {
	if idOrPrefix == "" {
		return Token{}, Invalid("id", "give a token id or a prefix of one")
	}
	prefix := idOrPrefix
	if !strings.HasPrefix(prefix, "tk_") {
		prefix = "tk_" + prefix
	}
	match, _, err := s.store.Tokens(ctx, TokenQuery{Prefix: prefix, Limit: 2})
	if err != nil {
		return Token{}, err
	}
	switch len(match) {
	case 0:
		return Token{}, ErrNotFound
	case 1:
	default:
		return Token{}, Invalid("id", "the prefix matches more than one token; give more of the id")
	}
	if match[0].RevokedAt != nil {
		return match[0], nil
	}
	at := s.clock.Now().UTC()
	if err := s.store.RevokeToken(ctx, match[0].Hash, at); err != nil {
		return Token{}, err
	}
	match[0].RevokedAt = &at
	s.tokens.forget(match[0].Hash)
	return match[0], nil
}

// TokenView is a token as shown: never its secret or hash.
type TokenView struct {
	ID        string     `json:"id"`
	Identity  string     `json:"identity"`
	Rights    []Right    `json:"rights"`
	Label     string     `json:"label"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// NewToken is create_token's answer: the only time the secret is shown.
type NewToken struct {
	TokenView
	Secret string `json:"secret"`
}

// TokenPage is a page of tokens; Cursor continues it, null at the end.
type TokenPage struct {
	Tokens []TokenView `json:"tokens"`
	Cursor *string     `json:"cursor"`
}

func viewToken(t Token) TokenView {
	rights := t.Rights
	if rights == nil {
		rights = []Right{}
	}
	return TokenView{ID: t.ID, Identity: t.Identity, Rights: rights, Label: t.Label, CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt}
}

// Authenticate resolves a bearer secret to its caller. Missing, unknown and
// revoked tokens are all the same refusal, so the answer reveals nothing.
func (s *Service) Authenticate(ctx context.Context, secret string) (Caller, error) {
	if secret == "" {
		return Caller{}, refuse(ReasonUnauthenticated, "a bearer token is required")
	}
	t, err := s.tokens.lookup(ctx, HashToken(secret))
	if errors.Is(err, ErrNotFound) || (err == nil && t.RevokedAt != nil) {
		return Caller{}, refuse(ReasonUnauthenticated, "the token is unknown or revoked")
	}
	if err != nil {
		return Caller{}, err
	}
	return Caller{Identity: t.Identity, Rights: t.Rights, Label: t.Label, TokenID: t.ID, tokenHash: t.Hash}, nil
}
