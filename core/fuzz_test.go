package core

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeEnvelope: any input is either refused with invalid_body naming a
// field, or accepted as an envelope that keeps every rule of docs/protocol.md §3.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"ask","body":"why?"}`,
		`{"parley":"1","kind":"answer","thread":"th_12","parent":7,"from":{"extension":"w-2"},"body":"b","provenance":{"model":"m"}}`,
		`{"kind":"assert","body":"b","evidence":[{"kind":"url","ref":"https://x"}],"supersedes":["cl_1"],"valid_until":"2030-01-01T00:00:00Z"}`,
		`{"kind":"attest","claim":"cl_3","body":"b","evidence":[{"kind":"log","ref":"r","note":"n"}]}`,
		`{"kind":"ask","body":"` + strings.Repeat("é", 501) + `"}`,
		"{\"kind\":\"ask\",\"body\":\"\xff\"}", `[`, `{"kind":"ask","body":"a"} {}`, `{"thread":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	lim := ReferenceLimits()
	f.Fuzz(func(t *testing.T, data []byte) {
		env, _, err := DecodeEnvelope(data, lim, true)
		if err != nil {
			r := AsRefusal(err)
			if r.Reason != ReasonInvalidBody || r.Detail["field"] == "" || r.Detail["field"] == nil {
				t.Fatalf("refusal %+v", r)
			}
			return
		}
		if !utf8.ValidString(env.Body) || !visible(env.Body) || checkText("body", env.Body) != nil || utf8.RuneCountInString(env.Body) > lim.Body || strings.ContainsRune(env.Body, 0) {
			t.Fatalf("accepted body %q", env.Body)
		}
		if _, ok := actOf(env.Kind, true); !ok {
			t.Fatalf("accepted kind %q", env.Kind)
		}
		if env.Thread < 0 || env.Parent < 0 || env.Claim < 0 || env.Thread > maxRef || (env.Thread == 0 && env.Parent != 0) {
			t.Fatalf("accepted refs %+v", env)
		}
		if env.Extension != "" && !ValidHandle(env.Extension) {
			t.Fatalf("accepted extension %q", env.Extension)
		}
		if len(env.Evidence) > lim.EvidenceItems || len(env.Supersedes) > lim.Supersedes {
			t.Fatalf("accepted lists %+v", env)
		}
	})
}

// FuzzParseRef: an accepted reference round-trips through its key.
func FuzzParseRef(f *testing.F) {
	for _, seed := range []string{"th_1", "42", "th_999999999999", "th_0", "007", "th_-1", "th_1 ", "١٢", "th_"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseRef(s, "th_", "thread")
		if err != nil {
			if AsRefusal(err).Reason != ReasonInvalidBody {
				t.Fatalf("refusal %v", err)
			}
			return
		}
		if n <= 0 || n > maxRef {
			t.Fatalf("%q → %d", s, n)
		}
		if k := ThreadKey(n); k != s && k != "th_"+s {
			t.Fatalf("%q → %d → %q", s, n, k)
		}
	})
}

// FuzzCursor: only cursors this server could have issued are accepted, and
// they re-encode to themselves.
func FuzzCursor(f *testing.F) {
	for _, seed := range []string{encodeCursor("threads", "42"), encodeCursor("inbox", "1795989839264#000000000000001#0000000002"), "", "!!", "dGhyZWFkc3w="} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, kind := range []string{"threads", "messages", "claims", "tokens", "events", "tevents", "inbox", "queue"} {
			pos, err := decodeCursor("cursor", kind, s)
			if err != nil {
				if AsRefusal(err).Reason != ReasonInvalidBody {
					t.Fatalf("refusal %v", err)
				}
				continue
			}
			if s != "" && encodeCursor(kind, pos) != s {
				t.Fatalf("%q decodes to %q, which encodes to %q", s, pos, encodeCursor(kind, pos))
			}
		}
	})
}
