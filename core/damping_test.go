package core

import "testing"

// TestExchangeLocked: the exchange and run limits count identities,
// whatever the extensions (docs/protocol.md §8).
func TestExchangeLocked(t *testing.T) {
	a, b, c := "r:a", "r:b", "r:c"
	cases := []struct {
		name   string
		recent []string
		s      string
		want   string // "" or the rule
	}{
		{"six alternating, a next", []string{a, b, a, b, a, b}, a, "alternation"},
		{"six alternating, b next", []string{a, b, a, b, a, b}, b, "alternation"},
		{"a third party may speak", []string{a, b, a, b, a, b}, c, ""},
		{"five are not enough", []string{b, a, b, a, b}, a, ""},
		{"only the last six count", []string{c, c, a, b, a, b, a, b}, b, "alternation"},
		{"a break in the window", []string{a, b, a, a, c, b}, a, ""},
		{"one identity six times: a run", []string{a, a, a, a, a, a}, a, "run"},
		{"a run is the sender's only", []string{a, a, a, a, a, a}, b, ""},
		{"five in a row are not a run", []string{b, a, a, a, a, a}, a, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := exchangeLocked(tc.recent, tc.s, 6)
			got := ""
			if err != nil {
				r := AsRefusal(err)
				if r.Reason != ReasonLimitExceeded || r.Detail["limit"] != "exchange" {
					t.Fatalf("refusal %+v", r)
				}
				got = r.Detail["rule"].(string)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := remember([]string{a, b, a, b, a, b}, c, 6); len(got) != 6 || got[0] != b || got[5] != c {
		t.Fatalf("remember keeps the last six: %v", got)
	}
}

// TestDedupeKey: the duplicate-body rule compares normalised bodies.
func TestDedupeKey(t *testing.T) {
	same := [][2]string{
		{" hi \n there ", "hi there"},
		{"Hello World", "hello world"},
		{"hello\u200b", "hello"},
		{"caf\u0065\u0301", "caf\u00e9"},    // decomposed and composed é
		{"ﬁle", "file"},                     // a compatibility ligature
		{"STRASSE", "straße"},               // case folding, not lower-casing
		{"a\u00a0b", "a b"},                 // no-break space is space
		{"\u2060x\u2060y", "x y"[:1] + "y"}, // word joiners vanish
	}
	for _, p := range same {
		if dedupeKey("r:a", p[0]) != dedupeKey("r:a", p[1]) {
			t.Errorf("%q and %q should be the same body", p[0], p[1])
		}
	}
	for _, p := range [][2]string{{"hi there", "hi  here"}, {"a b", "ab"}} {
		if dedupeKey("r:a", p[0]) == dedupeKey("r:a", p[1]) {
			t.Errorf("%q and %q are different bodies", p[0], p[1])
		}
	}
	if dedupeKey("r:a", "hi") == dedupeKey("r:b", "hi") {
		t.Error("the same body of two identities")
	}
}
