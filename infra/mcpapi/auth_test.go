package mcpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/mcpapi"
)

func TestAuthentication(t *testing.T) {
	s := newServer(t)
	revoked := "gone-secret-00001"
	tok, err := s.env.Service.ImportToken(context.Background(), revoked, core.TokenSpec{Identity: "ainotes:gone", Rights: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.env.Service.RevokeToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	s.secret["gone"] = revoked
	s.secret["wrong"] = "pt_not_a_token"
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	call := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		name, who, body string
		status          int
	}{
		{"initialize needs no token", "", init, 200},
		{"tools/list needs no token", "", list, 200},
		{"get_manifest needs no token", "", call("get_manifest"), 200},
		{"whoami needs a token", "", call("whoami"), 401},
		{"inbox needs a token", "", call("inbox"), 401},
		{"an unknown method without a token", "", `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`, 401},
		{"junk without a token", "", `{junk`, 401},
		{"a wrong token is refused even for tools/list", "wrong", list, 401},
		{"a revoked token is refused", "gone", call("whoami"), 401},
		{"a valid token works", "reader", call("whoami"), 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body, hdr := s.rpc(tc.who, []byte(tc.body))
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if status == 401 {
				if !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(string(body), `"reason":"unauthenticated"`) {
					t.Fatalf("401 without Bearer challenge or reason: %v %s", hdr, body)
				}
				if strings.Contains(string(body), "jsonrpc") {
					t.Fatalf("a 401 processed JSON-RPC: %s", body)
				}
			}
			if hdr.Get("Mcp-Session-Id") != "" {
				t.Fatalf("a stateless server handed out a session")
			}
		})
	}
	logs := s.env.Log.String()
	for _, secret := range s.secret {
		if strings.Contains(logs, secret) {
			t.Fatalf("a token reached the log")
		}
	}
	if !strings.Contains(logs, `"transport":"mcp","request_id"`) || !strings.Contains(logs, `"op":"whoami","identity":"ainotes:reader","outcome":"ok"`) {
		t.Fatalf("MCP request lines missing:\n%s", logs)
	}
}

// TestHostCheck: DNS-rebinding protection refuses a foreign Host only on a
// request that arrived on a loopback address; behind API Gateway (the Lambda
// adapter has no local address) the API's own Host passes.
func TestHostCheck(t *testing.T) {
	s := newServer(t)
	m, err := mcpapi.New(s.env.Service, s.env.Logger, "test")
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	newReq := func(url string) *http.Request {
		req := httptest.NewRequest("POST", url, strings.NewReader(body))
		req.Host = "abc123.execute-api.eu-west-1.amazonaws.com"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return req
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, newReq("https://abc123.execute-api.eu-west-1.amazonaws.com/mcp"))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"name":"post"`) {
		t.Fatalf("API Gateway host: %d %s", rec.Code, rec.Body.String())
	}
	req, _ := http.NewRequest("POST", s.srv.URL+"/mcp", strings.NewReader(body))
	req.Host = "evil.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Host on loopback: %d, want 403", res.StatusCode)
	}
}
