package core

import (
	"fmt"
	"strings"
	"testing"
)

// TestClaimStep checks every act on every claim state against docs/protocol.md §11,
// written out by hand.
func TestClaimStep(t *testing.T) {
	want := map[Kind]map[ClaimState]ClaimState{ // absent: invalid_transition
		KindAttest:    {ClaimUnverified: ClaimSupported, ClaimSupported: ClaimSupported, ClaimVerified: ClaimVerified},
		KindVerify:    {ClaimSupported: ClaimVerified},
		KindRefute:    {ClaimUnverified: ClaimRefuted, ClaimSupported: ClaimRefuted, ClaimVerified: ClaimRefuted, ClaimRefuted: ClaimRefuted},
		kindSupersede: {ClaimUnverified: ClaimSuperseded, ClaimSupported: ClaimSuperseded, ClaimVerified: ClaimSuperseded, ClaimRefuted: ClaimRefuted}, // a refutation stays (protocol §11)
	}
	for kind, table := range want {
		for _, from := range ClaimStates {
			t.Run(fmt.Sprintf("%s/%s", kind, from), func(t *testing.T) {
				got, err := ClaimStep(kind, from)
				to, ok := table[from]
				if !ok {
					if reasonOf(err) != ReasonInvalidTransition {
						t.Fatalf("got %s, %v; want invalid_transition", got, err)
					}
					return
				}
				if err != nil || got != to {
					t.Fatalf("got %s, %v; want %s", got, err, to)
				}
			})
		}
	}
}

func TestDialecticEnvelope(t *testing.T) {
	lim := ReferenceLimits()
	ev := `"evidence":[{"kind":"url","ref":"https://example.org/x"}]`
	nine := `"evidence":[` + strings.Repeat(`{"kind":"log","ref":"r"},`, 8) + `{"kind":"log","ref":"r"}]`
	cases := []struct {
		name, in  string
		dialectic bool
		field     string // "" = accepted
		rule      string
	}{
		{"assert opens a thread", `{"kind":"assert","body":"b",` + ev + `}`, true, "", ""},
		{"assert with supersedes and valid_until", `{"kind":"assert","body":"b",` + ev + `,"supersedes":["cl_1",2,"3"],"valid_until":"2030-01-01T00:00:00Z"}`, true, "", ""},
		{"attest needs no thread", `{"kind":"attest","claim":"cl_4","body":"b",` + ev + `}`, true, "", ""},
		{"verify needs no evidence", `{"kind":"verify","claim":4,"body":"b"}`, true, "", ""},
		{"profile off: kind unknown", `{"kind":"assert","body":"b",` + ev + `}`, false, "kind", ""},
		{"profile off: field unknown", `{"kind":"ask","body":"b",` + ev + `}`, false, "evidence", ""},
		{"evidence on a core kind", `{"kind":"ask","body":"b",` + ev + `}`, true, "evidence", ""},
		{"claim on a core kind", `{"kind":"inform","thread":1,"claim":"cl_1","body":"b"}`, true, "claim", ""},
		{"valid_until on attest", `{"kind":"attest","claim":1,"body":"b",` + ev + `,"valid_until":"2030-01-01T00:00:00Z"}`, true, "valid_until", ""},
		{"supersedes on refute", `{"kind":"refute","claim":1,"body":"b",` + ev + `,"supersedes":["cl_2"]}`, true, "supersedes", ""},
		{"claim on assert", `{"kind":"assert","claim":1,"body":"b",` + ev + `}`, true, "claim", ""},
		{"attest without claim", `{"kind":"attest","body":"b",` + ev + `}`, true, "claim", ""},
		{"bad claim ref", `{"kind":"attest","claim":"th_1","body":"b",` + ev + `}`, true, "claim", ""},
		{"evidence missing", `{"kind":"assert","body":"b"}`, true, "evidence", "missing"},
		{"evidence empty", `{"kind":"refute","claim":1,"body":"b","evidence":[]}`, true, "evidence", "missing"},
		{"too many evidence items", `{"kind":"attest","claim":1,"body":"b",` + nine + `}`, true, "evidence", "too_many"},
		{"bad evidence kind", `{"kind":"assert","body":"b","evidence":[{"kind":"opinion","ref":"x"}]}`, true, "evidence[0].kind", "kind"},
		{"evidence ref too long", `{"kind":"assert","body":"b","evidence":[{"kind":"url","ref":"` + strings.Repeat("r", 501) + `"}]}`, true, "evidence[0].ref", "too_long"},
		{"evidence note too long", `{"kind":"assert","body":"b","evidence":[{"kind":"note","ref":"r","note":"` + strings.Repeat("n", 201) + `"}]}`, true, "evidence[0].note", "too_long"},
		{"unknown evidence field", `{"kind":"assert","body":"b","evidence":[{"kind":"url","ref":"r","weight":3}]}`, true, "evidence[0].weight", ""},
		{"supersedes twice", `{"kind":"assert","body":"b",` + ev + `,"supersedes":["cl_1","1"]}`, true, "supersedes", ""},
		{"too many supersedes", `{"kind":"assert","body":"b",` + ev + `,"supersedes":[1,2,3,4,5,6,7,8,9]}`, true, "supersedes", ""},
		{"bad valid_until", `{"kind":"assert","body":"b",` + ev + `,"valid_until":"tomorrow"}`, true, "valid_until", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeEnvelope([]byte(tc.in), lim, tc.dialectic)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			r := AsRefusal(err)
			if err == nil || r.Reason != ReasonInvalidBody || r.Detail["field"] != tc.field {
				t.Fatalf("got %v (field %v), want invalid_body on %s", err, r.Detail["field"], tc.field)
			}
			if tc.rule != "" && r.Detail["rule"] != tc.rule {
				t.Fatalf("rule %v, want %s", r.Detail["rule"], tc.rule)
			}
		})
	}
}
