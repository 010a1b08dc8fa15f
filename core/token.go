package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"strings"
	"time"
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
	if len(s.Label) > 32 {
		return nil, Invalid("label", "label is limited to 32 characters")
	}
	return rights, nil
}

// CreateToken issues a new token and returns its secret, once.
func (s *Service) CreateToken(ctx context.Context, spec TokenSpec) (string, Token, error) {
	secret, err := NewSecret()
	if err != nil {
		return "", Token{}, err
	}
	t, err := s.ImportToken(ctx, secret, spec)
	return secret, t, err
}

// ImportToken stores a token whose secret the operator chose (a tokens file).
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
	if err := s.store.PutToken(ctx, t); err != nil {
		return Token{}, err
	}
	return t, nil
}

// Tokens lists every token, revoked ones included; secrets are never there.
func (s *Service) Tokens(ctx context.Context) ([]Token, error) { return s.store.Tokens(ctx) }

// RevokeToken revokes the one token whose id starts with idOrPrefix.
func (s *Service) RevokeToken(ctx context.Context, idOrPrefix string) (Token, error) {
	if idOrPrefix == "" {
		return Token{}, Invalid("id", "give a token id or a prefix of one")
	}
	all, err := s.store.Tokens(ctx)
	if err != nil {
		return Token{}, err
	}
	var match []Token
	for _, t := range all {
		if strings.HasPrefix(t.ID, idOrPrefix) || strings.HasPrefix(t.ID, "tk_"+idOrPrefix) {
			match = append(match, t)
		}
	}
	switch len(match) {
	case 0:
		return Token{}, ErrNotFound
	case 1:
	default:
		return Token{}, errors.New("the prefix matches more than one token; give more of the id")
	}
	at := s.clock.Now().UTC()
	if err := s.store.RevokeToken(ctx, match[0].Hash, at); err != nil {
		return Token{}, err
	}
	match[0].RevokedAt = &at
	return match[0], nil
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
	return Caller{Identity: t.Identity, Rights: t.Rights, Label: t.Label, TokenID: t.ID}, nil
}
