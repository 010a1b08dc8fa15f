package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestClientPush: a local server runs the push profile; bob subscribes
// through the client to a receiver on loopback, alice's open question
// reaches it, and verify-signature accepts that delivery with the secret
// the client printed once — and refuses it tampered, with another secret,
// or too old. subscriptions shows the delivery; unsubscribe removes it.
func TestClientPush(t *testing.T) {
	e := newClientEnv(t)
	type got struct {
		header string
		body   []byte
	}
	deliveries := make(chan got, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		deliveries <- got{r.Header.Get("Parley-Signature"), b}
	}))
	defer rcv.Close()

	out := e.ok("bob", "subscribe", rcv.URL+"/hook", "--events", "turn")
	m := regexp.MustCompile(`(?m)^(whsec_\S+)\n# (sub_[0-9a-f]{16})  turn  `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("subscribe printed %q", out)
	}
	secret, id := m[1], m[2]
	// Even a local server refuses private addresses other than loopback.
	if code, _, errOut := e.run("bob", "subscribe", "https://10.0.0.1/x"); code != 1 || !strings.Contains(errOut, "invalid_body") {
		t.Fatalf("a private address: exit %d %s", code, errOut)
	}

	e.ok("alice", "ask", "who takes the release notes?")
	var d got
	select {
	case d = <-deliveries:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery")
	}
	verify := func(secret, header, body string, extra ...string) int {
		code, _, _ := e.runIn("", body, append([]string{"verify-signature", "--secret", secret, "--header", header}, extra...)...)
		return code
	}
	if code := verify(secret, d.header, string(d.body)); code != 0 {
		t.Fatalf("the delivery does not verify: exit %d (%s)", code, d.header)
	}
	for name, code := range map[string]int{
		"a changed body":  verify(secret, d.header, strings.Replace(string(d.body), "release", "RELEASE", 1)),
		"another secret":  verify("whsec_0000", d.header, string(d.body)),
		"too old":         verify(secret, d.header, string(d.body), "--tolerance", "1ns"),
		"a broken header": verify(secret, "v1=00", string(d.body)),
	} {
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", name, code)
		}
	}
	if code, _, _ := e.run("", "verify-signature", "--header", d.header); code != 2 {
		t.Errorf("no secret: exit %d, want 2", code)
	}

	var listed string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if listed = e.ok("bob", "subscriptions"); regexp.MustCompile(id + `\s+turn\s+all\s+\S+\s+1\s+0\s+0\s+0`).MatchString(listed) {
			break
		}
	}
	if !regexp.MustCompile(id+`\s+turn\s+all\s+\S+\s+1\s+0\s+0\s+0`).MatchString(listed) || strings.Contains(listed, secret) {
		t.Fatalf("subscriptions: %s", listed)
	}
	if out := e.ok("bob", "unsubscribe", id); !strings.Contains(out, id+" removed") {
		t.Fatalf("unsubscribe: %s", out)
	}
	if out := e.ok("bob", "subscriptions"); !strings.Contains(out, "No subscriptions.") {
		t.Fatalf("after unsubscribe: %s", out)
	}
}
