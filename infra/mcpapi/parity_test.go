package mcpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/ainotes/parley/core"
)

// step is one operation with its MCP arguments; toHTTP derives the HTTP
// request from them by the route table of docs/protocol.md §10.
type step struct {
	who, op string
	args    map[string]any
	want    string // "ok" or the refusal reason
}

// toHTTP turns an operation's MCP arguments into its HTTP request by the
// operation table: path parameters into the path, query parameters into
// the query, header parameters into headers, the rest into the body.
func toHTTP(op string, args map[string]any) (method, path string, body any) {
	m, p, b, _ := toHTTPWithHeaders(op, args)
	return m, p, b
}

func toHTTPWithHeaders(op string, args map[string]any) (method, path string, body any, headers map[string]string) {
	var o *core.Operation
	for _, x := range core.AllOperations() {
		if x.Name == op {
			o = x
		}
	}
	if o == nil {
		panic("unknown op " + op)
	}
	path = o.Path
	q := url.Values{}
	rest := map[string]any{}
	headers = map[string]string{}
	for k, v := range args {
		rest[k] = v
	}
	for _, p := range o.Params {
		v, ok := args[p.Name]
		if !ok {
			continue
		}
		switch p.In {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", fmt.Sprint(v))
		case "query":
			q.Set(p.Name, fmt.Sprint(v))
		case "header":
			headers[p.Header] = fmt.Sprint(v)
		default:
			continue
		}
		delete(rest, p.Name)
	}
	if o.Method == "GET" || o.Method == "DELETE" {
		for k, v := range rest { // what the operation does not know goes where a client would put it
			q.Set(k, fmt.Sprint(v))
		}
		rest = map[string]any{}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	if len(rest) > 0 || (o.Method == "POST" && o.Name != "reopen") {
		body = rest
	}
	return o.Method, path, body, headers
}

// TestParity runs the same steps on two identical servers, one over HTTP and
// one over MCP, and requires the same outcome, the same reason and the same
// result object at every step: every operation, and the refusals
// token_right_missing, thread_authority_missing, self_reply, invalid_body,
// thread_closed and invalid_transition.
func TestParity(t *testing.T) {
	steps := []step{
		{"alice", "post", map[string]any{"kind": "ask", "body": "Parity?"}, "ok"},
		{"bob", "post", map[string]any{"kind": "answer", "thread": "th_1", "body": "Yes."}, "ok"},
		{"reader", "post", map[string]any{"kind": "ask", "body": "read-only"}, "token_right_missing"},
		{"bob", "post", map[string]any{"kind": "decide", "thread": 1, "body": "done"}, "thread_authority_missing"},
		{"bob", "mark", map[string]any{"thread": "th_1", "state": "decided"}, "thread_authority_missing"},
		{"bob", "post", map[string]any{"kind": "inform", "thread": "1", "parent": "msg_10002", "body": "me again"}, "self_reply"},
		{"bob", "post", map[string]any{"kind": "ask", "body": "   "}, "invalid_body"},
		{"bob", "post", map[string]any{"kind": "ask", "body": "x", "claim": "cl_1"}, "invalid_body"},
		{"alice", "mark", map[string]any{"thread": "th_1", "state": "sideways"}, "invalid_body"},
		{"alice", "mark", map[string]any{"thread": "th_1", "state": "answered"}, "invalid_transition"},
		{"alice", "mark", map[string]any{"thread": "th_1", "state": "decided"}, "ok"},
		{"bob", "confirm", map[string]any{"thread": "th_1", "state": "decided"}, "thread_authority_missing"},
		{"mod", "confirm", map[string]any{"thread": "th_1"}, "invalid_body"},
		{"mod", "confirm", map[string]any{"thread": "th_1", "state": "answered"}, "invalid_transition"},
		{"hana", "queue", map[string]any{}, "ok"},
		{"bob", "queue", map[string]any{}, "token_right_missing"},
		{"mod", "confirm", map[string]any{"thread": "th_1", "state": "decided"}, "ok"},
		{"mod", "mark", map[string]any{"thread": "th_1", "state": "closed"}, "ok"},
		{"bob", "post", map[string]any{"kind": "inform", "thread": "th_1", "body": "late"}, "thread_closed"},
		{"hana", "mark", map[string]any{"thread": "th_1", "state": "open"}, "thread_closed"},
		{"bob", "reopen", map[string]any{"thread": "th_1"}, "thread_authority_missing"},
		{"reader", "reopen", map[string]any{"thread": "th_1"}, "token_right_missing"},
		{"alice", "reopen", map[string]any{"thread": "th_1"}, "thread_authority_missing"},
		{"mod", "reopen", map[string]any{"thread": "th_1"}, "ok"},
		{"alice", "reopen", map[string]any{"thread": "th_1"}, "invalid_transition"},
		{"bob", "post", map[string]any{"kind": "ask", "body": "second", "from": map[string]any{"extension": "w2"}}, "ok"},
		{"bob", "get_thread", map[string]any{"thread": "th_1"}, "ok"},
		{"bob", "get_thread", map[string]any{"thread": "th_9"}, "thread_not_found"},
		{"reader", "list_threads", map[string]any{"limit": 1}, "ok"},
		{"reader", "list_threads", map[string]any{"state": "open"}, "ok"},
		{"reader", "list_threads", map[string]any{"state": "done"}, "invalid_body"},
		{"alice", "events", map[string]any{"thread": "th_1"}, "ok"},
		{"alice", "events", map[string]any{"limit": 2}, "ok"},
		{"alice", "inbox", map[string]any{}, "ok"},
		{"bob", "inbox", map[string]any{"extension": "w2"}, "ok"},
		{"hana", "whoami", map[string]any{}, "ok"},
		{"reader", "get_manifest", map[string]any{}, "ok"},
		{"mod", "list_tokens", map[string]any{}, "token_right_missing"},
		{"mod", "create_token", map[string]any{"identity": "ainotes:zed", "rights": []any{"read"}}, "token_right_missing"},
		{"hana", "create_token", map[string]any{"identity": "someone", "rights": []any{"read"}}, "invalid_body"},
		{"hana", "revoke_token", map[string]any{"id": "tk_000000000000"}, "token_not_found"},
		{"hana", "revoke_token", map[string]any{"id": "tk_0"}, "invalid_body"},
		// The dialectic profile.
		{"alice", "post", map[string]any{"kind": "assert", "body": "The build is reproducible.", "evidence": []any{map[string]any{"kind": "commit", "ref": "abc123"}}}, "ok"},
		{"bob", "post", map[string]any{"kind": "assert", "body": "no proof"}, "invalid_body"},
		{"bob", "post", map[string]any{"kind": "attest", "claim": "cl_1", "body": "rebuilt it", "evidence": []any{map[string]any{"kind": "hash", "ref": "sha256:00"}}}, "ok"},
		{"alice", "post", map[string]any{"kind": "attest", "claim": "cl_1", "body": "me too", "from": map[string]any{"extension": "x"}, "evidence": []any{map[string]any{"kind": "log", "ref": "l"}}}, "self_attest"},
		{"bob", "post", map[string]any{"kind": "verify", "claim": "cl_1", "body": "sealed"}, "token_right_missing"},
		{"hana", "post", map[string]any{"kind": "verify", "claim": "cl_1", "body": "sealed"}, "ok"},
		{"bob", "post", map[string]any{"kind": "refute", "claim": "cl_1", "body": "differs on arm64", "evidence": []any{map[string]any{"kind": "reproducer", "ref": "make repro"}}}, "ok"},
		{"bob", "post", map[string]any{"kind": "assert", "body": "replaces it", "evidence": []any{map[string]any{"kind": "note", "ref": "n"}}, "supersedes": []any{"cl_1"}}, "thread_authority_missing"},
		{"alice", "post", map[string]any{"kind": "assert", "body": "replaces it", "from": map[string]any{"extension": "y"}, "evidence": []any{map[string]any{"kind": "note", "ref": "n"}}, "supersedes": []any{"cl_1"}}, "ok"},
		{"bob", "post", map[string]any{"kind": "refute", "claim": "cl_1", "body": "again", "evidence": []any{map[string]any{"kind": "note", "ref": "n"}}}, "invalid_transition"},
		{"bob", "post", map[string]any{"kind": "attest", "claim": "cl_9", "body": "?", "evidence": []any{map[string]any{"kind": "note", "ref": "n"}}}, "claim_not_found"},
		{"reader", "get_claim", map[string]any{"claim": "cl_1"}, "ok"},
		{"reader", "get_claim", map[string]any{"claim": "cl_7"}, "claim_not_found"},
		{"reader", "list_claims", map[string]any{"state": "superseded"}, "ok"},
		{"reader", "list_claims", map[string]any{"thread": "th_3", "limit": 1}, "ok"},
		{"alice", "get_thread", map[string]any{"thread": "th_3"}, "ok"},
	}
	overHTTP, overMCP := newServer(t), newServer(t)
	for i, st := range steps {
		t.Run(fmt.Sprintf("%02d_%s_%s_%s", i, st.who, st.op, st.want), func(t *testing.T) {
			method, path, body := toHTTP(st.op, st.args)
			_, hres := overHTTP.http(st.who, method, path, body)
			_, mres := overMCP.call(st.who, st.op, st.args)
			hOut, mOut := "ok", "ok"
			if e, ok := hres["error"].(map[string]any); ok {
				hOut = e["reason"].(string)
			}
			mContent := mres["structuredContent"]
			if mres["isError"] == true {
				mOut = mContent.(map[string]any)["error"].(map[string]any)["reason"].(string)
			}
			if hOut != st.want || mOut != st.want {
				t.Fatalf("HTTP %s, MCP %s, want %s\nHTTP: %v\nMCP: %v", hOut, mOut, st.want, hres, mres)
			}
			if !reflect.DeepEqual(normalize(hres), normalize(mContent)) {
				hj, _ := json.Marshal(hres)
				mj, _ := json.Marshal(mContent)
				t.Fatalf("results differ\nHTTP: %s\nMCP:  %s", hj, mj)
			}
		})
	}
}

// normalize round-trips a value through JSON so that both sides compare as
// what a client would decode.
func normalize(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// TestReadBackAcrossTransports: a message posted over MCP reads back
// identically over HTTP, and the other way round.
func TestReadBackAcrossTransports(t *testing.T) {
	s := newServer(t)
	_, posted := s.call("alice", "post", map[string]any{"kind": "ask", "body": "posted over MCP", "from": map[string]any{"extension": "m"}, "provenance": map[string]any{"model": "m1"}})
	viaMCP := posted["structuredContent"].(map[string]any)["message"].(map[string]any)
	_, thread := s.http("bob", "GET", "/v1/threads/"+viaMCP["thread"].(string), nil)
	root := thread["messages"].([]any)[0].(map[string]any)
	if !reflect.DeepEqual(root, viaMCP) {
		t.Fatalf("MCP → HTTP\nposted: %v\nread:   %v", viaMCP, root)
	}
	_, res := s.http("bob", "POST", "/v1/messages", map[string]any{"kind": "answer", "thread": viaMCP["thread"], "body": "posted over HTTP"})
	viaHTTP := res["message"].(map[string]any)
	_, read := s.call("alice", "get_thread", map[string]any{"thread": viaHTTP["thread"]})
	reply := read["structuredContent"].(map[string]any)["messages"].([]any)[0].(map[string]any)["replies"].([]any)[0].(map[string]any)
	if !reflect.DeepEqual(reply, viaHTTP) {
		t.Fatalf("HTTP → MCP\nposted: %v\nread:   %v", viaHTTP, reply)
	}
	if !strings.HasPrefix(viaHTTP["id"].(string), "msg_") {
		t.Fatalf("id %v", viaHTTP["id"])
	}
}
