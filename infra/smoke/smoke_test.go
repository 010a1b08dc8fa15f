package smoke_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/smoke"
	"github.com/ainotes/parley/infra/testenv"
)

// server is the local server, both transports on one mux as `parley serve`
// has them, on the strict DynamoDB backend.
func server(t *testing.T, wrap func(http.Handler) http.Handler) (*testenv.Env, string) {
	t.Helper()
	env := testenv.New(t, core.Options{})
	var h http.Handler = env.Handler(t)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return env, srv.URL
}

// revokedAll reports whether every agent token is revoked.
func revokedAll(t *testing.T, env *testenv.Env) (agents int, ok bool) {
	t.Helper()
	page, err := env.Service.TokenPage(context.Background(), core.ListTokensInput{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	ok = true
	for _, tk := range page.Tokens {
		if strings.HasPrefix(tk.Identity, "human:") {
			continue
		}
		agents++
		if tk.RevokedAt == nil {
			ok = false
		}
	}
	return agents, ok
}

// TestRunAgainstTheLocalServer is what keeps `make smoke` from rotting:
// the whole conversation passes against the local server, and the agent
// tokens it minted are revoked at the end.
func TestRunAgainstTheLocalServer(t *testing.T) {
	env, url := server(t, nil)
	human := env.Token(t, "human:hana", "")
	var out bytes.Buffer
	if err := smoke.Run(context.Background(), url, human, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	for _, step := range []string{"create_token (agent a)", "post ask (a)", "post answer (b)", "inbox (a)", "post decide (a)", "queue shows the proposal",
		"confirm (human)", "get_thread", "events of the thread", "the same key replays", "a key differing after the comma",
		"refusal: self_reply", "refusal: token_right_missing", "refusal: invalid_body", "unknown route: JSON 404", "wrong method: 405",
		"mcp initialize", "mcp tools/list", "mcp tools/call post", "mcp refusal", "mcp GET: 405", "revoke_token tk_", "PASS"} {
		if !strings.Contains(out.String(), step) {
			t.Errorf("no step %q in the output", step)
		}
	}
	if n, ok := revokedAll(t, env); n != 2 || !ok {
		t.Fatalf("%d agent tokens, all revoked: %v", n, ok)
	}
}

// A surprise stops the run with an error naming the step, and the agent
// tokens are revoked all the same.
func TestRunStopsAtTheFirstSurpriseAndCleansUp(t *testing.T) {
	env, url := server(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/confirm") {
				http.Error(w, `{"error":{"reason":"internal"}}`, http.StatusInternalServerError)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	human := env.Token(t, "human:hana", "")
	var out bytes.Buffer
	err := smoke.RunWith(context.Background(), url, human, &out, smoke.Options{Settle: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "confirm (human)") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "FAIL confirm (human)") || strings.Contains(out.String(), "get_thread") {
		t.Fatalf("output:\n%s", out.String())
	}
	if n, ok := revokedAll(t, env); n != 2 || !ok {
		t.Fatalf("%d agent tokens, all revoked: %v\n%s", n, ok, out.String())
	}
}

func TestRunNeedsAHumanToken(t *testing.T) {
	env, url := server(t, nil)
	agent := env.Token(t, "ainotes:alice", "", "read", "write")
	var out bytes.Buffer
	if err := smoke.Run(context.Background(), url, agent, &out); err == nil || !strings.Contains(err.Error(), "human") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	for _, bad := range []string{"", "ftp://x", "not a url"} {
		if err := smoke.Run(context.Background(), bad, "t", &out); err == nil {
			t.Errorf("URL %q accepted", bad)
		}
	}
}
