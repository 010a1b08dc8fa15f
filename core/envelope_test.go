package core

import (
	"strings"
	"testing"
)

func TestDecodeEnvelope(t *testing.T) {
	lim := ReferenceLimits()
	long := strings.Repeat("é", 501)
	cases := []struct {
		name  string
		in    string
		field string // "" = accepted
		check func(t *testing.T, e Envelope)
	}{
		{"new ask", `{"kind":"ask","body":"why?"}`, "", func(t *testing.T, e Envelope) {
			if e.Kind != KindAsk || e.Thread != 0 || e.Body != "why?" {
				t.Fatalf("%+v", e)
			}
		}},
		{"thread as key", `{"kind":"answer","thread":"th_1042","body":"b"}`, "", func(t *testing.T, e Envelope) {
			if e.Thread != 1042 {
				t.Fatalf("thread = %d", e.Thread)
			}
		}},
		{"thread as number, parent as string", `{"kind":"inform","thread":7,"parent":"88","body":"b"}`, "", func(t *testing.T, e Envelope) {
			if e.Thread != 7 || e.Parent != 88 {
				t.Fatalf("%+v", e)
			}
		}},
		{"server-set fields are dropped", `{"parley":"1","id":"msg_9","author_kind":"human","created_at":"x","from":{"identity":"human:eve","extension":"w-2"},"kind":"ask","body":"b","provenance":{"model":"m","client":"c"}}`, "", func(t *testing.T, e Envelope) {
			if e.Extension != "w-2" || e.Provenance == nil || e.Provenance.Model != "m" {
				t.Fatalf("%+v", e)
			}
		}},
		{"500 characters are fine", `{"kind":"ask","body":"` + strings.Repeat("é", 500) + `"}`, "", nil},
		{"malformed JSON", `{"kind":`, "body", nil},
		{"two values", `{"kind":"ask","body":"a"} {}`, "body", nil},
		{"not an object", `[1]`, "body", nil},
		{"empty", ``, "body", nil},
		{"unknown field", `{"kind":"ask","body":"a","claim":"cl_1"}`, "claim", nil},
		{"unknown field in from", `{"kind":"ask","body":"a","from":{"handle":"x"}}`, "from.handle", nil},
		{"names are case-sensitive", `{"Kind":"ask","BODY":"x"}`, "Kind", nil},
		{"a folded name is not the name", "{\"\u212aind\":\"ask\",\"body\":\"x\"}", "\u212aind", nil},
		{"a name given twice", `{"kind":"inform","kind":"ask","body":"x"}`, "kind", nil},
		{"a name given twice in from", `{"kind":"ask","body":"x","from":{"extension":"a","extension":"b"}}`, "from.extension", nil},
		{"a control character in the body", `{"kind":"ask","body":"a\u0007b"}`, "body", nil},
		{"a C1 control character", `{"kind":"ask","body":"a\u0085b"}`, "body", nil},
		{"a bidi override in the body", `{"kind":"ask","body":"a\u202eb"}`, "body", nil},
		{"an isolate in the provenance", `{"kind":"ask","body":"a","provenance":{"model":"m\u2066"}}`, "provenance.model", nil},
		{"a body of format characters only", `{"kind":"ask","body":"\u200b \u200b"}`, "body", nil},
		{"newline and tab are text", `{"kind":"ask","body":"a\n\tb"}`, "", nil},
		{"an empty idempotency key", `{"kind":"ask","body":"a","idempotency_key":""}`, "idempotency_key", nil},
		{"missing kind", `{"body":"a"}`, "kind", nil},
		{"unknown kind", `{"kind":"vote","body":"a"}`, "kind", nil},
		{"kind of wrong type", `{"kind":3,"body":"a"}`, "kind", nil},
		{"empty body", `{"kind":"ask","body":""}`, "body", nil},
		{"blank body", `{"kind":"ask","body":" \n\t "}`, "body", nil},
		{"missing body", `{"kind":"ask"}`, "body", nil},
		{"body too long", `{"kind":"ask","body":"` + long + `"}`, "body", nil},
		{"NUL in body", `{"kind":"ask","body":"a\u0000b"}`, "body", nil},
		{"bad version", `{"parley":"2","kind":"ask","body":"a"}`, "parley", nil},
		{"version as number", `{"parley":1,"kind":"ask","body":"a"}`, "parley", nil},
		{"bad thread", `{"kind":"answer","thread":"thread-1","body":"a"}`, "thread", nil},
		{"negative thread", `{"kind":"answer","thread":-1,"body":"a"}`, "thread", nil},
		{"fractional thread", `{"kind":"answer","thread":1.5,"body":"a"}`, "thread", nil},
		{"zero-padded thread", `{"kind":"answer","thread":"007","body":"a"}`, "thread", nil},
		{"message key as thread", `{"kind":"answer","thread":"msg_1","body":"a"}`, "thread", nil},
		{"bad parent", `{"kind":"answer","thread":1,"parent":{},"body":"a"}`, "parent", nil},
		{"bad extension", `{"kind":"ask","body":"a","from":{"extension":"Worker 2"}}`, "from.extension", nil},
		{"long extension", `{"kind":"ask","body":"a","from":{"extension":"` + strings.Repeat("a", 33) + `"}}`, "from.extension", nil},
		{"long provenance", `{"kind":"ask","body":"a","provenance":{"model":"` + strings.Repeat("m", 129) + `"}}`, "provenance.model", nil},
		{"answer without thread", `{"kind":"answer","body":"a"}`, "thread", nil},
		{"parent without thread", `{"kind":"ask","parent":3,"body":"a"}`, "parent", nil},
		{"invalid UTF-8", "{\"kind\":\"ask\",\"body\":\"\xff\"}", "body", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, _, err := DecodeEnvelope([]byte(tc.in), lim, true)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tc.check != nil {
					tc.check(t, env)
				}
				return
			}
			r := AsRefusal(err)
			if err == nil || r.Reason != ReasonInvalidBody {
				t.Fatalf("got %v, want invalid_body", err)
			}
			if r.Detail["field"] != tc.field {
				t.Fatalf("detail.field = %v, want %q (%s)", r.Detail["field"], tc.field, r.Message)
			}
		})
	}
}

func TestAwaitingAfter(t *testing.T) {
	alice := Party{Identity: "ainotes:alice"}
	aliceW := Party{Identity: "ainotes:alice", Extension: "w"}
	bob := Party{Identity: "ainotes:bob"}
	carol := Party{Identity: "ainotes:carol"}
	hana := Party{Identity: "human:hana"}
	waitBob := Awaiting{Scope: AwaitParty, Party: bob}
	waitAlice := Awaiting{Scope: AwaitParty, Party: alice}
	anyBut := func(p Party) Awaiting { return Awaiting{Scope: AwaitAny, Party: p} }
	cases := []struct {
		name                      string
		cur                       Awaiting
		kind                      Kind
		s, parent, asker, creator Party
		newThread                 bool
		want                      Awaiting
	}{
		{"ask opens an open call", Awaiting{}, KindAsk, alice, Party{}, Party{}, alice, true, anyBut(alice)},
		{"ask in a thread awaits the parent's author", waitBob, KindAsk, bob, carol, alice, alice, false, Awaiting{Scope: AwaitParty, Party: carol}},
		{"answer awaits the asker", anyBut(alice), KindAnswer, bob, carol, alice, alice, false, waitAlice},
		{"answer to one's own ask awaits nobody", anyBut(alice), KindAnswer, alice, bob, alice, alice, false, Awaiting{}},
		{"clarify awaits the parent's author", waitBob, KindClarify, bob, alice, alice, alice, false, waitAlice},
		{"object awaits the parent's author", waitAlice, KindObject, alice, bob, alice, alice, false, waitBob},
		{"propose awaits the creator", Awaiting{}, KindPropose, bob, carol, alice, alice, false, waitAlice},
		{"propose by the creator awaits the parent's author", Awaiting{}, KindPropose, alice, bob, alice, alice, false, waitBob},
		{"propose by another extension of the creator", Awaiting{}, KindPropose, aliceW, bob, alice, alice, false, waitBob},
		{"inform by the awaited party clears", waitBob, KindInform, bob, alice, alice, alice, false, Awaiting{}},
		{"inform by someone else leaves it", waitBob, KindInform, carol, alice, alice, alice, false, waitBob},
		{"ack by the awaited party clears", waitBob, KindAck, bob, alice, alice, alice, false, Awaiting{}},
		{"ack by another extension leaves it", waitAlice, KindAck, aliceW, bob, alice, alice, false, waitAlice},
		{"ack on an open call by another party leaves it (protocol §4.2)", anyBut(alice), KindAck, bob, alice, alice, alice, false, anyBut(alice)},
		{"inform on an open call leaves it (protocol §4.2)", anyBut(alice), KindInform, carol, alice, alice, alice, false, anyBut(alice)},
		{"a question in reply replaces an open call", anyBut(alice), KindClarify, bob, alice, alice, alice, false, waitAlice},
		{"ack on an open call by its opener leaves it", anyBut(alice), KindAck, alice, bob, alice, alice, false, anyBut(alice)},
		{"ack on a human call by a human clears", Awaiting{Scope: AwaitHuman}, KindAck, hana, bob, alice, alice, false, Awaiting{}},
		{"ack on a human call by a model leaves it", Awaiting{Scope: AwaitHuman}, KindAck, bob, alice, alice, alice, false, Awaiting{Scope: AwaitHuman}},
		{"decide clears", waitBob, KindDecide, alice, bob, alice, alice, false, Awaiting{}},
		{"escalate awaits any human", waitBob, KindEscalate, bob, alice, alice, alice, false, Awaiting{Scope: AwaitHuman}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			act, _ := actOf(tc.kind, true)
			got := awaitingAfter(tc.cur, act, tc.newThread, turnParties{sender: tc.s, parent: tc.parent, asker: tc.asker, creator: tc.creator})
			if got != tc.want {
				t.Fatalf("awaiting = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCursorsAreStrict(t *testing.T) {
	good := encodeCursor("threads", "42")
	if id, err := decodeIDCursor("cursor", "threads", good); err != nil || id != 42 {
		t.Fatalf("round trip: %d %v", id, err)
	}
	for _, c := range []string{
		"!!!", encodeCursor("inbox", "42"), encodeCursor("threads", "042"), encodeCursor("threads", "-4"),
		encodeCursor("threads", "42\x00"), encodeCursor("threads", "4a"), good + "=", good[:len(good)-1] + "\n" + good[len(good)-1:],
	} {
		if _, err := decodeIDCursor("cursor", "threads", c); err == nil || AsRefusal(err).Reason != ReasonInvalidBody {
			t.Fatalf("cursor %q accepted", c)
		}
	}
}
