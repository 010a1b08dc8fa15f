package core

import "testing"

func TestExchangeLocked(t *testing.T) {
	a, b, c := Party{Identity: "r:a"}, Party{Identity: "r:b"}, Party{Identity: "r:c"}
	aX := Party{Identity: "r:a", Extension: "x"}
	cases := []struct {
		name   string
		recent []Party
		s      Party
		want   bool
	}{
		{"six alternating, a next", []Party{a, b, a, b, a, b}, a, true},
		{"six alternating, b next", []Party{a, b, a, b, a, b}, b, true},
		{"a third party may speak", []Party{a, b, a, b, a, b}, c, false},
		{"another extension is another party", []Party{a, b, a, b, a, b}, aX, false},
		{"five are not enough", []Party{b, a, b, a, b}, a, false},
		{"only the last six count", []Party{c, c, a, b, a, b, a, b}, b, true},
		{"a break in the window", []Party{a, b, a, a, a, b}, a, false},
		{"one party alone is self_reply's business", []Party{a, a, a, a, a, a}, a, false},
		{"with an extension in the pair", []Party{aX, b, aX, b, aX, b}, aX, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := exchangeLocked(tc.recent, tc.s, 6); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if got := remember([]Party{a, b, a, b, a, b}, c, 6); len(got) != 6 || got[0] != b || got[5] != c {
		t.Fatalf("remember keeps the last six: %v", got)
	}
	if dedupeKey("r:a", " hi \n there ") != dedupeKey("r:a", "hi there") || dedupeKey("r:a", "hi") == dedupeKey("r:b", "hi") {
		t.Fatal("dedupe keys")
	}
}
