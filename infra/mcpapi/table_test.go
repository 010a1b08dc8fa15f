package mcpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ainotes/parley/core"
)

// TestEveryOperationFromTheTable: for each operation of the table, over
// both transports: a token without the operation's right gets
// token_right_missing whatever it sends (docs/protocol.md §5.8), and the same
// malformed input gets the same refusal naming the same field on HTTP and
// MCP (docs/protocol.md §3.3).
func TestEveryOperationFromTheTable(t *testing.T) {
	s := newServer(t)
	_, opened := s.call("alice", "post", map[string]any{"kind": "ask", "body": "table"})
	th := opened["structuredContent"].(map[string]any)["thread"].(map[string]any)["id"].(string)
	// A token that holds no right for each right an operation needs.
	without := map[core.Right]string{core.RightRead: "", core.RightWrite: "reader", core.RightLock: "alice", core.RightHuman: "mod"}
	s.secret[""] = ""
	junk := []any{map[string]any{"junk": true}, map[string]any{"Thread": th}, []any{1}, "x"}
	for _, op := range core.AllOperations() {
		if op.Right == "" || op.Right == core.RightRead {
			continue // public, or read: every token reads
		}
		who := without[op.Right]
		for i, args := range junk {
			t.Run(fmt.Sprintf("%s/no-right/%d", op.Name, i), func(t *testing.T) {
				h, m := both(t, s, who, op, args)
				if h.reason != "token_right_missing" || m.reason != "token_right_missing" {
					t.Fatalf("HTTP %s, MCP %s, want token_right_missing whatever the input", h.reason, m.reason)
				}
			})
		}
	}

	// Malformed input: the same refusal, the same field, on both transports.
	cases := []struct {
		name  string
		op    string
		args  any // MCP arguments; HTTP derives the request from them
		field string
	}{
		{"case variant", "post", map[string]any{"Kind": "ask", "body": "x"}, "Kind"},
		{"unknown field", "post", map[string]any{"kind": "ask", "body": "x", "weight": 1}, "weight"},
		{"control character", "post", map[string]any{"kind": "ask", "body": "a\u0007b"}, "body"},
		{"bidi override", "post", map[string]any{"kind": "ask", "body": "a\u202eb"}, "body"},
		{"nothing visible", "post", map[string]any{"kind": "ask", "body": "\u200b"}, "body"},
		{"control character in an extension", "post", map[string]any{"kind": "ask", "body": "x", "from": map[string]any{"extension": "a\nb"}}, "from.extension"},
		{"limit 0", "list_threads", map[string]any{"limit": 0}, "limit"},
		{"limit -1", "list_threads", map[string]any{"limit": -1}, "limit"},
		{"limit not a number", "inbox", map[string]any{"limit": "ten"}, "limit"},
		{"unknown parameter", "list_threads", map[string]any{"page": 2}, "page"},
		{"unknown parameter of a path operation", "get_thread", map[string]any{"thread": th, "depth": 2}, "depth"},
		{"a bad state", "mark", map[string]any{"thread": th, "state": "sideways"}, "state"},
		{"a bad reference", "get_thread", map[string]any{"thread": "msg_1"}, "thread"},
		{"confirm without the state seen", "confirm", map[string]any{"thread": th}, "state"},
		{"a bad token id", "revoke_token", map[string]any{"id": "tk_XYZ"}, "id"},
		{"a label with a control character", "create_token", map[string]any{"identity": "ainotes:x", "rights": []any{"read"}, "label": "a\u0000"}, "label"},
	}
	for _, tc := range cases {
		t.Run("malformed/"+tc.name, func(t *testing.T) {
			var op *core.Operation
			for _, o := range core.AllOperations() {
				if o.Name == tc.op {
					op = o
				}
			}
			h, m := both(t, s, "hana", op, tc.args)
			if h.reason != "invalid_body" || m.reason != "invalid_body" || h.field != tc.field || m.field != tc.field {
				t.Fatalf("HTTP %s/%s, MCP %s/%s, want invalid_body/%s", h.reason, h.field, m.reason, m.field, tc.field)
			}
		})
	}

	// Duplicate names cannot be built from a map: the same raw JSON both ways.
	t.Run("malformed/a name given twice", func(t *testing.T) {
		raw := `{"kind":"inform","kind":"ask","body":"x"}`
		status, body := s.raw("hana", "POST", "/v1/messages", raw)
		var h struct{ Error struct{ Reason string } }
		_ = json.Unmarshal(body, &h)
		_, res, _ := s.rpc("hana", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"post","arguments":`+raw+`}}`))
		if status != 400 || h.Error.Reason != "invalid_body" || !strings.Contains(string(res), `"reason":"invalid_body"`) || !strings.Contains(string(res), `"field":"kind"`) {
			t.Fatalf("HTTP %d %s; MCP %s", status, body, res)
		}
	})
}

type outcome struct{ reason, field string }

// both calls an operation over HTTP and over MCP with the same input.
func both(t *testing.T, s *server, who string, op *core.Operation, args any) (outcome, outcome) {
	t.Helper()
	var h outcome
	if m, ok := args.(map[string]any); ok {
		method, path, body, headers := toHTTPWithHeaders(op.Name, m)
		status, res := s.httpWith(who, method, path, body, headers)
		if e, ok := res["error"].(map[string]any); ok {
			h.reason = fmt.Sprint(e["reason"])
			h.field = fmt.Sprint(e["detail"].(map[string]any)["field"])
		} else {
			h.reason = fmt.Sprint(status)
		}
	} else {
		// Not an object: as an HTTP body.
		raw, _ := json.Marshal(args)
		path := strings.NewReplacer("{thread}", "th_1", "{id}", "tk_000000000000", "{claim}", "cl_1").Replace(op.Path)
		status, body := s.raw(who, op.Method, path, string(raw))
		var res struct {
			Error struct {
				Reason string         `json:"reason"`
				Detail map[string]any `json:"detail"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &res)
		h.reason, h.field = res.Error.Reason, fmt.Sprint(res.Error.Detail["field"])
		if h.reason == "" {
			h.reason = fmt.Sprint(status)
		}
	}
	_, res := s.call(who, op.Name, args)
	var m outcome
	if res["isError"] == true {
		e := res["structuredContent"].(map[string]any)["error"].(map[string]any)
		m.reason = fmt.Sprint(e["reason"])
		m.field = fmt.Sprint(e["detail"].(map[string]any)["field"])
	} else {
		m.reason = fmt.Sprint(res)
	}
	return h, m
}

// raw sends a raw HTTP request to the API.
func (s *server) raw(who, method, path, body string) (int, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	if who != "" && s.secret[who] != "" {
		req.Header.Set("Authorization", "Bearer "+s.secret[who])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

// httpWith is http with extra headers.
func (s *server) httpWith(who, method, path string, body any, headers map[string]string) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, s.srv.URL+path, rd)
	if who != "" && s.secret[who] != "" {
		req.Header.Set("Authorization", "Bearer "+s.secret[who])
	}
	for k, v := range headers {
		req.Header.Set(k, v)
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

// TestResultsMatchTheirSchemas: what every operation returns, and every
// refusal, validates against the output schema its tool publishes — what
// clients that validate (the TypeScript SDK, the Inspector) check.
func TestResultsMatchTheirSchemas(t *testing.T) {
	s := newServer(t)
	schemas := map[string]*jsonschema.Resolved{}
	_, list, _ := s.rpc("", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	var tools struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(list, &tools); err != nil || len(tools.Result.Tools) == 0 {
		t.Fatalf("tools/list: %v %s", err, list)
	}
	for _, tool := range tools.Result.Tools {
		var sc jsonschema.Schema
		if err := json.Unmarshal(tool.OutputSchema, &sc); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		r, err := sc.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		schemas[tool.Name] = r
	}
	check := func(tool string, res map[string]any) {
		t.Helper()
		sc := res["structuredContent"]
		if err := schemas[tool].Validate(normalize(sc)); err != nil {
			raw, _ := json.Marshal(sc)
			t.Fatalf("%s: %v\n%s", tool, err, raw)
		}
	}
	ev := []any{map[string]any{"kind": "url", "ref": "https://example.org/x", "note": "n"}}
	steps := []struct {
		who, op string
		args    map[string]any
	}{
		{"alice", "post", map[string]any{"kind": "ask", "body": "schemas?", "provenance": map[string]any{"model": "m"}}},
		{"bob", "post", map[string]any{"kind": "answer", "thread": "th_1", "body": "yes"}},
		{"alice", "post", map[string]any{"kind": "assert", "thread": "th_1", "body": "claim", "evidence": ev, "valid_until": "2030-01-01T00:00:00Z"}},
		{"bob", "post", map[string]any{"kind": "attest", "claim": "cl_1", "body": "seen", "evidence": ev}},
		{"bob", "post", map[string]any{"kind": "escalate", "thread": "th_1", "body": "a human, please"}},
		{"alice", "mark", map[string]any{"thread": "th_1", "state": "decided"}},
		{"hana", "queue", map[string]any{}},
		{"mod", "confirm", map[string]any{"thread": "th_1", "state": "decided"}},
		{"hana", "reopen", map[string]any{"thread": "th_1"}},
		{"alice", "get_thread", map[string]any{"thread": "th_1", "limit": 2}},
		{"alice", "list_threads", map[string]any{}},
		{"alice", "events", map[string]any{}},
		{"alice", "events", map[string]any{"thread": "th_1"}},
		{"hana", "inbox", map[string]any{}},
		{"alice", "whoami", map[string]any{}},
		{"reader", "get_manifest", map[string]any{}},
		{"alice", "get_claim", map[string]any{"claim": "cl_1"}},
		{"alice", "list_claims", map[string]any{}},
		{"hana", "create_token", map[string]any{"identity": "ainotes:new", "rights": []any{"read"}}},
		{"hana", "list_tokens", map[string]any{}},
		{"bob", "subscribe", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []any{"turn", "message"}, "thread": "th_1"}},
		{"bob", "list_subscriptions", map[string]any{}},
		{"bob", "unsubscribe", map[string]any{"id": "sub_0000000000000000"}},
		// Refusals validate too.
		{"reader", "post", map[string]any{"kind": "ask", "body": "no"}},
		{"hana", "revoke_token", map[string]any{"id": "tk_000000000000"}},
		{"bob", "mark", map[string]any{"thread": "th_9", "state": "decided"}},
	}
	seen := map[string]bool{}
	for _, st := range steps {
		_, res := s.call(st.who, st.op, st.args)
		if res["structuredContent"] == nil {
			t.Fatalf("%s: no structured content: %v", st.op, res)
		}
		check(st.op, res)
		seen[st.op] = true
	}
	_, tok := s.call("hana", "list_tokens", map[string]any{})
	id := tok["structuredContent"].(map[string]any)["tokens"].([]any)[0].(map[string]any)["id"]
	_, res := s.call("hana", "revoke_token", map[string]any{"id": id})
	check("revoke_token", res)
	seen["revoke_token"] = true
	_, subs := s.call("bob", "list_subscriptions", map[string]any{})
	sid := subs["structuredContent"].(map[string]any)["subscriptions"].([]any)[0].(map[string]any)["id"]
	_, res = s.call("bob", "unsubscribe", map[string]any{"id": sid})
	if res["isError"] == true {
		t.Fatalf("unsubscribe: %v", res)
	}
	check("unsubscribe", res)
	for _, op := range core.AllOperations() {
		if !seen[op.Name] {
			t.Errorf("no result of %s was checked", op.Name)
		}
	}
}

// TestToolSchemasAreCoreSchemas: what tools/list publishes for every tool
// is, as JSON, exactly the schemas core generates (mcpapi hands them to
// the SDK converted, not as maps).
func TestToolSchemasAreCoreSchemas(t *testing.T) {
	s := newServer(t)
	_, list, _ := s.rpc("", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	var tools struct {
		Result struct {
			Tools []struct {
				Name         string `json:"name"`
				InputSchema  any    `json:"inputSchema"`
				OutputSchema any    `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(list, &tools); err != nil || len(tools.Result.Tools) != len(core.AllOperations()) {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Result.Tools))
	}
	asJSON := func(v any) any {
		raw, _ := json.Marshal(v)
		var out any
		_ = json.Unmarshal(raw, &out)
		return out
	}
	for _, tool := range tools.Result.Tools {
		op, ok := s.env.Service.Operation(tool.Name)
		if !ok {
			t.Fatalf("a tool %s without an operation", tool.Name)
		}
		sc := s.env.Service.Schemas(op)
		if !reflect.DeepEqual(tool.InputSchema, asJSON(sc.In)) || !reflect.DeepEqual(tool.OutputSchema, asJSON(sc.Out)) {
			t.Errorf("%s: the published schemas are not core's", tool.Name)
		}
	}
}
