package mcpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/mcpapi"
	"github.com/ainotes/parley/infra/testenv"
)

// fixedTokens are imported with known secrets so transcripts are reproducible.
var fixedTokens = []struct {
	name, secret, identity, label string
	rights                        []string
}{
	{"alice", "alice-secret-0001", "ainotes:alice", "", []string{"read", "write"}},
	{"bob", "bob-secret-000001", "ainotes:bob", "", []string{"read", "write"}},
	{"mod", "mod-secret-000001", "ainotes:mod", "mod", []string{"read", "write", "lock"}},
	{"hana", "hana-secret-00001", "human:hana", "", nil},
	{"reader", "reader-secret-001", "ainotes:reader", "", []string{"read"}},
}

// server runs both transports on one mux, as `parley serve` does.
type server struct {
	t      *testing.T
	env    *testenv.Env
	srv    *httptest.Server
	secret map[string]string
}

func newServer(t *testing.T) *server {
	t.Helper()
	env := testenv.New(t, core.Options{Clock: testenv.NewClock(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)),
		// every profile on, push with loopback receivers allowed as on a local server
		Push: core.PushPolicy{Key: []byte("mcp test push key"), Local: true}})
	s := &server{t: t, env: env, secret: map[string]string{}}
	for _, ft := range fixedTokens {
		if _, err := env.Service.ImportToken(context.Background(), ft.secret, core.TokenSpec{Identity: ft.identity, Rights: ft.rights, Label: ft.label}); err != nil {
			t.Fatal(err)
		}
		s.secret[ft.name] = ft.secret
	}
	// The MCP handler under test (its version fixed for the transcripts) in
	// front of the instance's whole mux, for the HTTP side of the parity
	// checks: the transports meet in the instance, not in each other.
	m, err := mcpapi.New(env.Service, env.Logger, "test")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", m)
	mux.Handle("/", env.Handler(t))
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// rpc posts one JSON-RPC message to /mcp as the named party ("" = no token).
func (s *server) rpc(who string, body []byte) (int, []byte, http.Header) {
	s.t.Helper()
	return s.request(who, "POST", body)
}

// request sends one HTTP request to /mcp as the named party.
func (s *server) request(who, method string, body []byte) (int, []byte, http.Header) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.srv.URL+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+s.secret[who])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw, res.Header
}

// call runs tools/call and returns the result object (or the JSON-RPC error).
func (s *server) call(who, tool string, args any) (int, map[string]any) {
	s.t.Helper()
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	status, raw, _ := s.rpc(who, req)
	var msg map[string]any
	if err := json.Unmarshal(raw, &msg); err != nil {
		return status, map[string]any{"raw": string(raw)}
	}
	if r, ok := msg["result"].(map[string]any); ok {
		return status, r
	}
	return status, msg
}

// http sends a plain HTTP request to the API as the named party.
func (s *server) http(who, method, path string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, s.srv.URL+path, rd)
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+s.secret[who])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}
