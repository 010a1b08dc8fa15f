package mcpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// step is one operation with its MCP arguments; toHTTP derives the HTTP
// request from them by the route table of decisions §9.
type step struct {
	who, op string
	args    map[string]any
	want    string // "ok" or the refusal reason
}

func toHTTP(op string, args map[string]any) (method, path string, body any) {
	q := url.Values{}
	for _, k := range []string{"state", "cursor", "limit", "since", "extension"} {
		if v, ok := args[k]; ok && op != "mark" {
			q.Set(k, fmt.Sprint(v))
		}
	}
	if v, ok := args["thread"]; ok && (op == "events") {
		q.Set("thread", fmt.Sprint(v))
	}
	qs := ""
	if len(q) > 0 {
		qs = "?" + q.Encode()
	}
	th := fmt.Sprint(args["thread"])
	switch op {
	case "get_manifest":
		return "GET", "/v1/manifest", nil
	case "whoami":
		return "GET", "/v1/whoami", nil
	case "post":
		return "POST", "/v1/messages", args
	case "get_thread":
		return "GET", "/v1/threads/" + th, nil
	case "list_threads":
		return "GET", "/v1/threads" + qs, nil
	case "mark":
		return "POST", "/v1/threads/" + th + "/mark", map[string]any{"state": args["state"]}
	case "confirm", "reopen":
		return "POST", "/v1/threads/" + th + "/" + op, nil
	case "events":
		return "GET", "/v1/events" + qs, nil
	case "inbox":
		return "GET", "/v1/inbox" + qs, nil
	case "get_claim":
		return "GET", "/v1/claims/" + fmt.Sprint(args["claim"]), nil
	case "list_claims":
		if v, ok := args["thread"]; ok {
			q.Set("thread", fmt.Sprint(v))
			qs = "?" + q.Encode()
		}
		return "GET", "/v1/claims" + qs, nil
	}
	panic("unknown op " + op)
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
		{"bob", "confirm", map[string]any{"thread": "th_1"}, "thread_authority_missing"},
		{"mod", "confirm", map[string]any{"thread": "th_1"}, "ok"},
		{"mod", "mark", map[string]any{"thread": "th_1", "state": "closed"}, "ok"},
		{"bob", "post", map[string]any{"kind": "inform", "thread": "th_1", "body": "late"}, "thread_closed"},
		{"hana", "mark", map[string]any{"thread": "th_1", "state": "open"}, "thread_closed"},
		{"bob", "reopen", map[string]any{"thread": "th_1"}, "thread_authority_missing"},
		{"reader", "reopen", map[string]any{"thread": "th_1"}, "token_right_missing"},
		{"alice", "reopen", map[string]any{"thread": "th_1"}, "ok"},
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
