package mcpapi_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ainotes/parley/core"
)

// TestAuthorizationMatrix: every operation of the table × {no token,
// revoked token, reader, writer, creator, lock holder, verifier, human},
// over HTTP and MCP, each case on its own fresh thread so that earlier
// cases change nothing.
func TestAuthorizationMatrix(t *testing.T) {
	callers := []string{"none", "revoked", "reader", "writer", "creator", "lock", "verifier", "human"}
	const ok = "ok"
	read := map[string]string{"none": "unauthenticated", "revoked": "unauthenticated", "reader": ok, "writer": ok, "creator": ok, "lock": ok, "verifier": ok, "human": ok}
	expect := map[string]map[string]string{
		"get_manifest": {"none": ok, "revoked": "unauthenticated", "reader": ok, "writer": ok, "creator": ok, "lock": ok, "verifier": ok, "human": ok},
		"whoami":       read, "get_thread": read, "list_threads": read, "events": read, "inbox": read, "get_claim": read, "list_claims": read,
		"subscribe": read, "list_subscriptions": read, "unsubscribe": read,
		"post":    {"none": "unauthenticated", "revoked": "unauthenticated", "reader": "token_right_missing", "writer": ok, "creator": ok, "lock": ok, "verifier": ok, "human": ok},
		"mark":    {"none": "unauthenticated", "revoked": "unauthenticated", "reader": "token_right_missing", "writer": "thread_authority_missing", "creator": ok, "lock": ok, "verifier": "thread_authority_missing", "human": ok},
		"confirm": {"none": "unauthenticated", "revoked": "unauthenticated", "reader": "token_right_missing", "writer": "thread_authority_missing", "creator": "thread_authority_missing", "lock": ok, "verifier": "thread_authority_missing", "human": ok},
		"reopen":  {"none": "unauthenticated", "revoked": "unauthenticated", "reader": "token_right_missing", "writer": "thread_authority_missing", "creator": ok, "lock": ok, "verifier": "thread_authority_missing", "human": ok},
		"queue":   {"none": "unauthenticated", "revoked": "unauthenticated", "reader": "token_right_missing", "writer": "token_right_missing", "creator": "token_right_missing", "lock": ok, "verifier": "token_right_missing", "human": ok},
	}
	humanOnly := map[string]string{"none": "unauthenticated", "revoked": "unauthenticated", "reader": "token_right_missing", "writer": "token_right_missing", "creator": "token_right_missing", "lock": "token_right_missing", "verifier": "token_right_missing", "human": ok}
	for _, op := range []string{"create_token", "list_tokens", "revoke_token"} {
		expect[op] = humanOnly
	}
	for _, op := range core.AllOperations() {
		if expect[op.Name] == nil {
			t.Fatalf("the matrix misses the operation %s", op.Name)
		}
	}
	for _, transport := range []string{"http", "mcp"} {
		s := newServer(t)
		ctx := context.Background()
		for name, id := range map[string]string{"writer": "ainotes:carol", "verifier": "ainotes:vera", "revoked": "ainotes:gone"} {
			rights := []string{"read", "write"}
			if name == "verifier" {
				rights = append(rights, "verify")
			}
			secret := "matrix-" + name + "-secret"
			tok, err := s.env.Service.ImportToken(ctx, secret, core.TokenSpec{Identity: id, Rights: rights})
			if err != nil {
				t.Fatal(err)
			}
			if name == "revoked" {
				if _, err := s.env.Service.RevokeToken(ctx, tok.ID); err != nil {
					t.Fatal(err)
				}
			}
			s.secret[name] = secret
		}
		s.secret["creator"], s.secret["lock"], s.secret["human"] = s.secret["alice"], s.secret["mod"], s.secret["hana"]
		s.secret["none"] = ""
		n := 0
		for op, byCaller := range expect {
			for _, who := range callers {
				t.Run(fmt.Sprintf("%s/%s/%s", transport, op, who), func(t *testing.T) {
					n++
					// A fresh thread of alice's with a reply by bob, in the
					// state the operation needs.
					_, opened := s.call("alice", "post", map[string]any{"kind": "ask", "body": fmt.Sprintf("matrix %d", n)})
					th := opened["structuredContent"].(map[string]any)["thread"].(map[string]any)["id"].(string)
					_, reply := s.call("bob", "post", map[string]any{"kind": "inform", "thread": th, "body": fmt.Sprintf("context %d", n)})
					parent := reply["structuredContent"].(map[string]any)["message"].(map[string]any)["id"]
					_, asserted := s.call("bob", "post", map[string]any{"kind": "assert", "thread": th, "body": fmt.Sprintf("claim %d", n), "evidence": []any{map[string]any{"kind": "note", "ref": "r"}}})
					claim := asserted["structuredContent"].(map[string]any)["claim"].(map[string]any)["id"]
					switch op {
					case "confirm":
						s.call("alice", "mark", map[string]any{"thread": th, "state": "answered"})
					case "reopen": // closed by its creator: a proposal
						s.call("alice", "mark", map[string]any{"thread": th, "state": "answered"})
						s.call("alice", "mark", map[string]any{"thread": th, "state": "closed"})
					}
					args := map[string]any{"thread": th}
					switch op {
					case "post":
						args = map[string]any{"kind": "inform", "thread": th, "parent": parent, "body": fmt.Sprintf("%s says hi %d", who, n)}
					case "mark":
						args["state"] = "decided"
					case "confirm":
						args["state"] = "answered"
					case "get_manifest", "whoami", "list_threads", "inbox", "list_claims", "queue", "list_tokens", "list_subscriptions":
						args = map[string]any{}
					case "get_claim":
						args = map[string]any{"claim": claim}
					case "subscribe":
						args = map[string]any{"url": "http://127.0.0.1:9/hook", "events": []any{"turn"}, "thread": th}
					case "unsubscribe": // the caller's own subscription, when it has a token
						args = map[string]any{"id": "sub_0000000000000000"}
						if caller, err := s.env.Service.Authenticate(ctx, s.secret[who]); err == nil {
							sub, err := s.env.Service.Subscribe(ctx, caller, core.SubscribeInput{URL: "http://127.0.0.1:9/hook", Events: []string{"state"}})
							if err != nil {
								t.Fatal(err)
							}
							args["id"] = sub.ID
						}
					case "create_token":
						args = map[string]any{"identity": fmt.Sprintf("ainotes:made%d", n), "rights": []any{"read"}}
					case "revoke_token":
						tok, err := s.env.Service.ImportToken(ctx, fmt.Sprintf("revocable-secret-%04d", n), core.TokenSpec{Identity: "ainotes:victim", Rights: []string{"read"}})
						if err != nil {
							t.Fatal(err)
						}
						args = map[string]any{"id": tok.ID}
					}
					got := ""
					if transport == "http" {
						method, path, body := toHTTP(op, args)
						status, res := s.http(who, method, path, body)
						got = ok
						if e, isErr := res["error"].(map[string]any); isErr {
							got = e["reason"].(string)
						} else if status >= 300 {
							got = fmt.Sprint(status)
						}
					} else {
						status, res := s.call(who, op, args)
						switch {
						case status == 401:
							got = "unauthenticated"
						case res["isError"] == true:
							got = res["structuredContent"].(map[string]any)["error"].(map[string]any)["reason"].(string)
						case res["structuredContent"] != nil:
							got = ok
						default:
							got = fmt.Sprint(status, res)
						}
					}
					if want := byCaller[who]; got != want {
						t.Fatalf("got %s, want %s", got, want)
					}
				})
			}
		}
	}
}
