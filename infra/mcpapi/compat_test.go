package mcpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientCompatibility runs real MCP clients over the wire against the
// server newServer starts (both transports on one mux, as `parley serve`):
// the official TypeScript SDK (tsclient/client.mjs --strict), the MCP
// Inspector CLI, and the Go SDK's own client. Each must list the tools, post,
// and read a refusal as isError with {"error":{"reason",…}} as structured
// content, without a transport error on the way. docs/mcp.md keeps the
// compatibility table these checks back.
//
// The Node clients are installed by `make test` (npm ci in tsclient); the test
// fails rather than skips when they are missing.
func TestClientCompatibility(t *testing.T) {
	dir, err := filepath.Abs("tsclient")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"node_modules/@modelcontextprotocol/sdk/package.json",
		"node_modules/@modelcontextprotocol/inspector/package.json",
		"node_modules/.bin/mcp-inspector",
	} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("the MCP clients are not installed: %v\nrun make test (it runs npm ci in %s)", err, dir)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH (Node 20 or later is needed for the MCP client tests; run make test): %v", err)
	}
	s := newServer(t)
	t.Run("GET and DELETE /mcp", func(t *testing.T) { compatMethods(t, s) })
	t.Run("typescript-sdk", func(t *testing.T) { compatTypeScript(t, s, dir) })
	t.Run("inspector-cli", func(t *testing.T) { compatInspector(t, s, dir) })
	t.Run("go-sdk", func(t *testing.T) { compatGo(t, s) })
}

// wireExchange is one HTTP request a client made, as it recorded it.
type wireExchange struct {
	Client string `json:"client"`
	Method string `json:"method"`
	RPC    string `json:"rpc"`
	Status int    `json:"status"`
}

// failedExchanges lists the requests answered 4xx/5xx, but for the 405 a
// stateless server owes GET and DELETE, with what each answer needs to be.
func failedExchanges(wire []wireExchange) []string {
	var out []string
	for _, w := range wire {
		noStream := w.Method == http.MethodGet || w.Method == http.MethodDelete
		if w.Status < 400 || noStream && w.Status == http.StatusMethodNotAllowed {
			continue
		}
		what := fmt.Sprintf("%s /mcp %s -> %d", w.Method, w.RPC, w.Status)
		if noStream {
			what = fmt.Sprintf("%s /mcp -> %d (want 405 Method Not Allowed with Allow: POST: a stateless server opens no SSE stream)", w.Method, w.Status)
		}
		if w.Client != "" {
			what = w.Client + ": " + what
		}
		if !slices.Contains(out, what) {
			out = append(out, what)
		}
	}
	return out
}

// compatMethods: the Streamable HTTP clients open a standalone SSE stream
// with GET /mcp after initialize (and may end a session with DELETE). A
// stateless server must answer 405 with Allow: POST, token or not; anything
// else is an error on the TypeScript client's onerror and leaves the
// Inspector's connection in status error, listing no tools.
func compatMethods(t *testing.T, s *server) {
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		for _, who := range []string{"alice", ""} {
			req, _ := http.NewRequest(method, s.srv.URL+"/mcp", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if who != "" {
				req.Header.Set("Authorization", "Bearer "+s.secret[who])
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(res.Body, 200))
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(res.Header.Get("Allow"), "POST") {
				t.Errorf("%s /mcp (token: %v): %d, Allow %q, body %q; want 405 with Allow: POST",
					method, who != "", res.StatusCode, res.Header.Get("Allow"), strings.TrimSpace(string(body)))
			}
		}
	}
}

func compatTypeScript(t *testing.T, s *server, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", s.srv.URL, s.secret["alice"], s.secret["bob"], "--strict")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs --strict: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Client struct {
			Name, Version, ProtocolVersion string
		}
		Tools   []string
		Refusal struct {
			IsError bool   `json:"isError"`
			Reason  string `json:"reason"`
			Listed  bool   `json:"listed"`
			Thrown  string `json:"thrown"`
		}
		OutputSchemas struct {
			Checked       int `json:"checked"`
			RejectRefusal []struct {
				Tool, Error string
			} `json:"rejectRefusal"`
		} `json:"outputSchemas"`
		Errors []string       `json:"errors"`
		Wire   []wireExchange `json:"wire"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client.mjs output %q: %v\nstderr: %s", stdout.String(), err, stderr.String())
	}
	t.Logf("client: %s %s, protocol version %s", got.Client.Name, got.Client.Version, got.Client.ProtocolVersion)
	if !slices.Contains(got.Tools, "post") {
		t.Errorf("tools/list: %v, want post among them", got.Tools)
	}
	if !got.Refusal.Listed {
		t.Errorf("client.mjs did not list the tools before the refusal (is --strict passed through?)")
	}
	switch {
	case got.Refusal.Thrown != "":
		t.Errorf("a refused post, on a client that had listed the tools, threw instead of returning isError: %s\n"+
			"(the SDK validates structuredContent against outputSchema even when isError is true: post's outputSchema must also accept {\"error\":{\"reason\",\"message\",\"detail\"}})", got.Refusal.Thrown)
	case !got.Refusal.IsError || got.Refusal.Reason != "self_reply":
		t.Errorf("refusal as the client saw it: isError %v, reason %q; want true, self_reply", got.Refusal.IsError, got.Refusal.Reason)
	}
	if n := len(got.OutputSchemas.RejectRefusal); n > 0 {
		names := make([]string, n)
		for i, r := range got.OutputSchemas.RejectRefusal {
			names[i] = r.Tool
		}
		t.Errorf("%d of %d outputSchemas reject a refusal object under the SDK's validator: %s\nfirst: %s: %s",
			n, got.OutputSchemas.Checked, strings.Join(names, ", "), got.OutputSchemas.RejectRefusal[0].Tool, got.OutputSchemas.RejectRefusal[0].Error)
	}
	if len(got.Errors) > 0 {
		var uniq []string
		for _, e := range got.Errors {
			if !slices.Contains(uniq, e) {
				uniq = append(uniq, e)
			}
		}
		t.Errorf("the client reported errors:\n  %s\nfailed HTTP exchanges: %v", strings.Join(uniq, "\n  "), failedExchanges(got.Wire))
	} else if bad := failedExchanges(got.Wire); len(bad) > 0 {
		t.Errorf("failed HTTP exchanges: %v", bad)
	}
}

// runInspector runs the MCP Inspector CLI against the test server as alice.
func runInspector(t *testing.T, s *server, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{"--cli", s.srv.URL + "/mcp", "--transport", "http",
		"--header", "Authorization: Bearer " + s.secret["alice"]}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "mcp-inspector"), argv...)
	cmd.Dir = dir
	// The Inspector keeps state under ~/.mcp-inspector; keep it out of $HOME.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("mcp-inspector %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), code
}

// inspectorResult is the JSON the Inspector CLI prints for tools/list and tools/call.
type inspectorResult struct {
	Tools             []struct{ Name string } `json:"tools"`
	IsError           bool                    `json:"isError"`
	StructuredContent map[string]any          `json:"structuredContent"`
}

// compatGetStatus is how the server answers the Inspector's GET /mcp, for a
// failure message.
func compatGetStatus(s *server) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+s.secret["alice"])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 200))
	return res.StatusCode, fmt.Sprintf("%d, Allow %q, body %q", res.StatusCode, res.Header.Get("Allow"), strings.TrimSpace(string(body)))
}

// lintFinding is one finding of the Inspector's --strict report (stderr):
//
//	Warning: tool "post"
//	  Path: inputSchema.properties.thread
//	  Issue: `type` is an array (["string","integer"]). …
//	  Suggestion: …
var lintFinding = regexp.MustCompile(`(?m)^(Warning|Error): tool "([^"]+)"\n  Path: (\S+)\n  Issue: (.*)$`)

// lintRule names the Inspector's rule (core/json/schemaLint.ts) from the issue text.
func lintRule(issue string) string {
	switch {
	case strings.HasPrefix(issue, "`type` is an array"):
		return "type-union"
	case strings.HasPrefix(issue, "`$ref` points outside"):
		return "remote-ref"
	case strings.HasPrefix(issue, "Schema carries no validation keyword"):
		return "untyped-schema"
	case strings.HasPrefix(issue, "Bare `"):
		return "boolean-schema"
	}
	return "other"
}

func compatInspector(t *testing.T, s *server, dir string) {
	version, _, _ := runInspector(t, s, dir, "--version")
	t.Logf("client: @modelcontextprotocol/inspector CLI %s (clientInfo inspector-cli)", strings.TrimSpace(version))
	// The Inspector lists nothing, silently, when its GET /mcp after
	// initialize fails with anything but 405.
	noTools := func(what string) string {
		code, desc := compatGetStatus(s)
		if code == http.StatusMethodNotAllowed {
			return fmt.Sprintf("%s, though GET /mcp answers %s: look at the Inspector's wire (MCP_DEBUG=1)", what, desc)
		}
		return fmt.Sprintf("%s: GET /mcp answers %s; the Inspector lists no tools when its GET after initialize is not answered 405 (its connection goes to status error)", what, desc)
	}

	t.Run("tools/list", func(t *testing.T) {
		out, errOut, code := runInspector(t, s, dir, "--method", "tools/list")
		var res inspectorResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
			t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
		}
		if len(res.Tools) == 0 {
			t.Fatalf("%s", noTools("tools/list returned no tools"))
		}
		if !slices.ContainsFunc(res.Tools, func(x struct{ Name string }) bool { return x.Name == "post" }) {
			t.Errorf("tools/list: %v, want post among them", res.Tools)
		}
		if strings.Contains(errOut, "Schema portability:") {
			t.Logf("%s", strings.TrimSpace(errOut))
		}
	})

	t.Run("tools/list --strict", func(t *testing.T) {
		out, errOut, code := runInspector(t, s, dir, "--method", "tools/list", "--strict")
		var res inspectorResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
		}
		if len(res.Tools) == 0 {
			t.Fatalf("%s", noTools("--strict linted no tools"))
		}
		findings := lintFinding.FindAllStringSubmatch(errOut, -1)
		if code != 0 || len(findings) > 0 {
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			summary := lines[len(lines)-1]
			rules := map[string]int{}
			for _, f := range findings {
				rules[strings.ToLower(f[1])+" "+lintRule(f[4])]++
			}
			var first []string
			for _, f := range findings[:min(5, len(findings))] {
				first = append(first, fmt.Sprintf("%s %s %s: %s", f[1], f[2], f[3], lintRule(f[4])))
			}
			t.Errorf("--strict: exit %d, %d findings (%s), want exit 0 and none; last line: %s\nfirst findings:\n  %s\n"+
				"type-union (a `type` array) is fixed by anyOf branches of one type each; untyped-schema by a type; run with -v for the full report",
				code, len(findings), compatCounts(rules), summary, strings.Join(first, "\n  "))
			if testing.Verbose() {
				t.Logf("full report:\n%s", errOut)
			}
		}
	})

	t.Run("tools/call post", func(t *testing.T) {
		out, errOut, code := runInspector(t, s, dir, "--method", "tools/call", "--tool-name", "post",
			"--tool-args-json", `{"kind":"ask","body":"Asked through the MCP Inspector CLI"}`)
		if strings.Contains(errOut, "not found on server") {
			t.Fatalf("%s\nstderr: %s", noTools("the Inspector found no post tool"), errOut)
		}
		var res inspectorResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
			t.Fatalf("exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
		}
		msg, _ := res.StructuredContent["message"].(map[string]any)
		if res.IsError || msg == nil || !strings.HasPrefix(fmt.Sprint(msg["id"]), "msg_") {
			t.Errorf("post: %s", out)
		}
	})

	t.Run("tools/call post refused", func(t *testing.T) {
		// The thread comes over HTTP, so this check stands on its own.
		status, body := s.http("alice", "POST", "/v1/messages", map[string]any{"kind": "ask", "body": "A thread for the Inspector's refusal"})
		th, _ := body["thread"].(map[string]any)
		if status != http.StatusCreated || th == nil {
			t.Fatalf("HTTP post: %d %v", status, body)
		}
		args, _ := json.Marshal(map[string]any{"kind": "inform", "thread": th["id"], "body": "replying to myself"})
		out, errOut, code := runInspector(t, s, dir, "--method", "tools/call", "--tool-name", "post", "--tool-args-json", string(args))
		if strings.Contains(errOut, "not found on server") {
			t.Fatalf("%s\nstderr: %s", noTools("the Inspector found no post tool"), errOut)
		}
		var res inspectorResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("no result printed (exit %d): the Inspector validates structuredContent against the outputSchema even when isError is true, so post's outputSchema must also accept {\"error\":{\"reason\",\"message\",\"detail\"}}\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		e, _ := res.StructuredContent["error"].(map[string]any)
		if !res.IsError || e == nil || e["reason"] != "self_reply" {
			t.Errorf("refusal: %s", out)
		}
		// A tool result with isError true is exit code 5 (TOOL_ERROR).
		if code != 5 || !strings.Contains(errOut, "tool_is_error") {
			t.Errorf("exit %d, stderr %s; want 5 and tool_is_error", code, errOut)
		}
	})
}

func compatCounts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// compatRecorder adds the bearer token and records every exchange.
type compatRecorder struct {
	token string
	mu    sync.Mutex
	wire  []wireExchange
}

func (r *compatRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.token)
	rpc := ""
	if req.Body != nil && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			var msg struct{ Method string }
			raw, _ := io.ReadAll(b)
			if json.Unmarshal(raw, &msg) == nil {
				rpc = msg.Method
			}
		}
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.wire = append(r.wire, wireExchange{Method: req.Method, RPC: rpc, Status: res.StatusCode})
		r.mu.Unlock()
	}
	return res, err
}

func (r *compatRecorder) exchanges() []wireExchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.wire)
}

// goSDKVersion is the go-sdk version this test is built with: from the
// build info when the toolchain records it, else from go.mod.
func goSDKVersion() string {
	const path = "github.com/modelcontextprotocol/go-sdk"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	if raw, err := os.ReadFile("../../go.mod"); err == nil {
		if m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(path) + `\s+(v\S+)`).FindSubmatch(raw); m != nil {
			return string(m[1])
		}
	}
	return "unknown"
}

func compatGo(t *testing.T, s *server) {
	t.Logf("client: github.com/modelcontextprotocol/go-sdk %s (mcp.Client, StreamableClientTransport)", goSDKVersion())
	for _, era := range []struct{ name, version string }{
		{"default", ""},          // server/discover first (2026-07-28), else initialize
		{"legacy", "2025-11-25"}, // initialize, then the standalone GET stream
	} {
		t.Run(era.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rec := &compatRecorder{token: s.secret["alice"]}
			client := mcp.NewClient(&mcp.Implementation{Name: "parley-compat-test", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: rec}},
				&mcp.ClientSessionOptions{ProtocolVersion: era.version})
			if err != nil {
				t.Fatalf("connect: %v\nexchanges: %+v", err, rec.exchanges())
			}
			defer cs.Close()
			t.Logf("negotiated protocol version %s with %s %s", cs.InitializeResult().ProtocolVersion,
				cs.InitializeResult().ServerInfo.Name, cs.InitializeResult().ServerInfo.Version)

			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if !slices.ContainsFunc(list.Tools, func(x *mcp.Tool) bool { return x.Name == "post" }) {
				t.Fatalf("tools/list has no post (%d tools)", len(list.Tools))
			}

			var ok struct {
				Message struct{ ID string } `json:"message"`
				Thread  struct{ ID string } `json:"thread"`
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "post", Arguments: map[string]any{"kind": "ask", "body": "Asked through the Go SDK client (" + era.name + ")"}})
			if err != nil {
				t.Fatalf("post: %v", err)
			}
			if res.IsError || compatRemarshal(res.StructuredContent, &ok) != nil || ok.Thread.ID == "" {
				t.Fatalf("post: isError %v, structured %v", res.IsError, res.StructuredContent)
			}

			var refused struct {
				Error struct {
					Reason, Message string
					Detail          map[string]any
				}
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "post", Arguments: map[string]any{"kind": "inform", "thread": ok.Thread.ID, "body": "replying to myself"}})
			if err != nil {
				t.Fatalf("refused post: a JSON-RPC error instead of a tool result: %v", err)
			}
			if !res.IsError || compatRemarshal(res.StructuredContent, &refused) != nil || refused.Error.Reason != "self_reply" || refused.Error.Message == "" || refused.Error.Detail == nil {
				t.Errorf("refused post: isError %v, structured %v; want isError and error.reason self_reply", res.IsError, res.StructuredContent)
			}
			if bad := failedExchanges(rec.exchanges()); len(bad) > 0 {
				t.Errorf("failed HTTP exchanges (the Go client tolerates them; others do not): %v", bad)
			}
		})
	}
}

func compatRemarshal(from, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, to)
}
