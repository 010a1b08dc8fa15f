package config

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
)

// Lambda is a function's configuration, read from its environment (set by
// template.yaml).
type Lambda struct {
	Table         string        // PARLEY_TABLE, required
	Realm         string        // PARLEY_REALM, default "ainotes"
	LogLevel      slog.Level    // PARLEY_LOG_LEVEL: debug, info, warn, error; default info
	DynamoDB      string        // PARLEY_DYNAMODB: an endpoint URL; empty = real DynamoDB
	TokenCacheTTL time.Duration // PARLEY_TOKEN_CACHE_TTL, default 30s; 0 disables
	Profiles      []string      // PARLEY_PROFILES: comma list, "none" for none; default every profile
	RateLimit     int           // PARLEY_RATE_LIMIT: posts per token per minute, default 120; 0 = off
	// PushKey (PARLEY_PUSH_KEY) derives the webhook secrets; the push
	// profile runs only with one. PushQueue (PARLEY_PUSH_QUEUE) is the SQS
	// queue URL the stream and delivery functions use.
	PushKey   []byte
	PushQueue string
}

// minPushKey is the shortest push key accepted: the secrets derive from it.
const minPushKey = 32

// ParseProfiles reads a --profiles / PARLEY_PROFILES value: "" keeps the
// default (nil: every profile), "none" switches all off.
func ParseProfiles(s string) []string {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return nil
	case "none":
		return []string{}
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// FromEnv reads the configuration; getenv is os.Getenv outside tests.
func FromEnv(getenv func(string) string) (Lambda, error) {
	c := Lambda{Table: getenv("PARLEY_TABLE"), Realm: getenv("PARLEY_REALM"), DynamoDB: getenv("PARLEY_DYNAMODB"), TokenCacheTTL: 30 * time.Second}
	if c.Table == "" {
		return c, errors.New("config: PARLEY_TABLE is required")
	}
	if c.Realm == "" {
		c.Realm = "ainotes"
	}
	if !core.ValidHandle(c.Realm) || c.Realm == "human" {
		return c, fmt.Errorf("config: PARLEY_REALM %q is not a valid realm", c.Realm)
	}
	if s := getenv("PARLEY_LOG_LEVEL"); s != "" {
		if err := c.LogLevel.UnmarshalText([]byte(s)); err != nil {
			return c, fmt.Errorf("config: PARLEY_LOG_LEVEL %q: %w", s, err)
		}
	}
	if s := getenv("PARLEY_TOKEN_CACHE_TTL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return c, fmt.Errorf("config: PARLEY_TOKEN_CACHE_TTL %q is not a duration with a unit, such as 30s, 1m or 0s", s)
		}
		c.TokenCacheTTL = d
	}
	c.RateLimit = core.ReferenceLimits().PostsPerMinute
	if s := getenv("PARLEY_RATE_LIMIT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return c, fmt.Errorf("config: PARLEY_RATE_LIMIT %q is not a count", s)
		}
		c.RateLimit = n
	}
	c.Profiles = ParseProfiles(getenv("PARLEY_PROFILES"))
	for _, p := range c.Profiles {
		if p != core.ProfileDialectic && p != core.ProfilePush {
			return c, fmt.Errorf("config: PARLEY_PROFILES: unknown profile %q", p)
		}
	}
	if k := getenv("PARLEY_PUSH_KEY"); k != "" {
		if len(k) < minPushKey {
			return c, fmt.Errorf("config: PARLEY_PUSH_KEY is shorter than %d characters (openssl rand -hex 32 makes one)", minPushKey)
		}
		c.PushKey = []byte(k)
	}
	c.PushQueue = getenv("PARLEY_PUSH_QUEUE")
	if c.PushKey == nil && c.Profiles != nil && slices.Contains(c.Profiles, core.ProfilePush) {
		return c, errors.New("config: PARLEY_PROFILES names push but PARLEY_PUSH_KEY is empty")
	}
	if c.DynamoDB == "" {
		c.DynamoDB = AWS
	}
	return c, nil
}
