package config

import (
	"log/slog"
	"reflect"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cases := []struct {
		name string
		env  map[string]string
		ok   bool
		want Lambda
	}{
		{"defaults", map[string]string{"PARLEY_TABLE": "t"}, true, Lambda{Table: "t", Realm: "ainotes", DynamoDB: AWS, TokenCacheTTL: 30 * time.Second, RateLimit: 120}},
		{"everything", map[string]string{"PARLEY_TABLE": "t", "PARLEY_REALM": "labs", "PARLEY_LOG_LEVEL": "debug", "PARLEY_DYNAMODB": "http://127.0.0.1:8000", "PARLEY_TOKEN_CACHE_TTL": "0s", "PARLEY_RATE_LIMIT": "0"}, true,
			Lambda{Table: "t", Realm: "labs", LogLevel: slog.LevelDebug, DynamoDB: "http://127.0.0.1:8000"}},
		{"no table", map[string]string{}, false, Lambda{}},
		{"bad realm", map[string]string{"PARLEY_TABLE": "t", "PARLEY_REALM": "Not Ok"}, false, Lambda{}},
		{"bad level", map[string]string{"PARLEY_TABLE": "t", "PARLEY_LOG_LEVEL": "loud"}, false, Lambda{}},
		{"bad ttl", map[string]string{"PARLEY_TABLE": "t", "PARLEY_TOKEN_CACHE_TTL": "soon"}, false, Lambda{}},
		{"no profiles", map[string]string{"PARLEY_TABLE": "t", "PARLEY_PROFILES": "none"}, true, Lambda{Table: "t", Realm: "ainotes", DynamoDB: AWS, TokenCacheTTL: 30 * time.Second, RateLimit: 120, Profiles: []string{}}},
		{"bad rate limit", map[string]string{"PARLEY_TABLE": "t", "PARLEY_RATE_LIMIT": "-3"}, false, Lambda{}},
		{"unknown profile", map[string]string{"PARLEY_TABLE": "t", "PARLEY_PROFILES": "voting"}, false, Lambda{}},
		{"negative ttl", map[string]string{"PARLEY_TABLE": "t", "PARLEY_TOKEN_CACHE_TTL": "-1s"}, false, Lambda{}},
		// A number without a unit is not a duration (the template's pattern
		// keeps it out; functions/template_test.go checks the two agree).
		{"ttl without a unit", map[string]string{"PARLEY_TABLE": "t", "PARLEY_TOKEN_CACHE_TTL": "30"}, false, Lambda{}},
		{"ttl of zero", map[string]string{"PARLEY_TABLE": "t", "PARLEY_TOKEN_CACHE_TTL": "0"}, true, Lambda{Table: "t", Realm: "ainotes", DynamoDB: AWS, RateLimit: 120}},
		{"ttl in parts", map[string]string{"PARLEY_TABLE": "t", "PARLEY_TOKEN_CACHE_TTL": "1m30s"}, true, Lambda{Table: "t", Realm: "ainotes", DynamoDB: AWS, TokenCacheTTL: 90 * time.Second, RateLimit: 120}},
		{"push", map[string]string{"PARLEY_TABLE": "t", "PARLEY_PUSH_KEY": "0123456789abcdef0123456789abcdef", "PARLEY_PUSH_QUEUE": "https://sqs.eu-west-1.amazonaws.com/1/q"}, true,
			Lambda{Table: "t", Realm: "ainotes", DynamoDB: AWS, TokenCacheTTL: 30 * time.Second, RateLimit: 120, PushKey: []byte("0123456789abcdef0123456789abcdef"), PushQueue: "https://sqs.eu-west-1.amazonaws.com/1/q"}},
		{"a short push key", map[string]string{"PARLEY_TABLE": "t", "PARLEY_PUSH_KEY": "secret"}, false, Lambda{}},
		{"push named without a key", map[string]string{"PARLEY_TABLE": "t", "PARLEY_PROFILES": "dialectic,push"}, false, Lambda{}},
		{"the realm of humans", map[string]string{"PARLEY_TABLE": "t", "PARLEY_REALM": "human"}, false, Lambda{}},
		{"empty dynamodb is real DynamoDB", map[string]string{"PARLEY_TABLE": "t", "PARLEY_DYNAMODB": ""}, true, Lambda{Table: "t", Realm: "ainotes", DynamoDB: AWS, TokenCacheTTL: 30 * time.Second, RateLimit: 120}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromEnv(env(tc.env))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if tc.ok && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
