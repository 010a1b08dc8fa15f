package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/localdb"
	"github.com/ainotes/parley/infra/testenv"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTokenCommands(t *testing.T) {
	isolate(t) // without a login, token commands need --dynamodb
	db, err := localdb.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dyn := []string{"--dynamodb", db.URL, "--table", "cli"}
	// Token commands never create a table; `table create` does.
	if code, _, errOut := runCLI(t, append([]string{"token", "list"}, dyn...)...); code != 1 || !strings.Contains(errOut, "parley table create") {
		t.Fatalf("a missing table: %d %q", code, errOut)
	}
	if code, out, errOut := runCLI(t, append([]string{"table", "create"}, dyn...)...); code != 0 || !strings.Contains(out, "ready") {
		t.Fatalf("table create: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "token", "list", "--dynamodb", "aws"); code != 2 || !strings.Contains(errOut, "--table is required") {
		t.Fatalf("aws without --table: %d %q", code, errOut)
	}

	code, out, errOut := runCLI(t, append([]string{"token", "create", "--identity", "ainotes:ops", "--rights", "read,write,lock", "--label", "ops"}, dyn...)...)
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	secret := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if !strings.HasPrefix(secret, "pt_") || len(secret) < 40 {
		t.Fatalf("secret %q", secret)
	}
	id := regexp.MustCompile(`tk_[0-9a-f]{12}`).FindString(out)
	if id == "" {
		t.Fatalf("no token id in %q", out)
	}
	runCLI(t, append([]string{"token", "create", "--identity", "human:hana"}, dyn...)...)

	code, out, _ = runCLI(t, append([]string{"token", "list"}, dyn...)...)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "ainotes:ops") || !strings.Contains(out, "human:hana") || strings.Contains(out, secret) {
		t.Fatalf("list: %d %q", code, out)
	}

	code, out, errOut = runCLI(t, append([]string{"token", "revoke", id[:7]}, dyn...)...)
	if code != 0 || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke by prefix: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, append([]string{"token", "list"}, dyn...)...)
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, id) {
			line = l
		}
	}
	if code != 0 || strings.HasSuffix(strings.TrimSpace(line), "-") {
		t.Fatalf("revoked token not shown revoked: %q", line)
	}

	for _, bad := range [][]string{
		{"token", "create", "--identity", "nobody", "--rights", "read"},
		{"token", "create", "--identity", "ainotes:x", "--rights", "root"},
		{"token", "revoke", "tk_ffffffffffff"},
	} {
		if code, _, _ := runCLI(t, append(bad, dyn...)...); code == 0 {
			t.Fatalf("%v succeeded", bad)
		}
	}
	if code, _, errOut := runCLI(t, "token", "list"); code != 2 || !strings.Contains(errOut, "--dynamodb") {
		t.Fatalf("token without --dynamodb: %d %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "bogus"); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
}

// startServe runs `parley serve` until the test ends and returns its base URL.
func startServe(t *testing.T, args ...string) (string, *testenv.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, logs := &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), out, logs) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, logs.String())
		}
	})
	re := regexp.MustCompile(`Parley on (http://127\.0\.0\.1:[0-9]+)`)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			time.Sleep(20 * time.Millisecond) // the rest of the banner
			return m[1], out
		}
	}
	t.Fatalf("serve did not start: %s %s", out.String(), logs.String())
	return "", nil
}

func call(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, m
}

// TestServeEmbeddedPrintsWorkingDemo: the banner's tokens and curl work.
func TestServeEmbeddedPrintsWorkingDemo(t *testing.T) {
	base, out := startServe(t)
	banner := out.String()
	for _, want := range []string{"in memory", "ainotes:alice", "ainotes:bob", "ainotes:mod", "human:hana", "curl -s -X POST " + base + "/v1/messages"} {
		if !strings.Contains(banner, want) {
			t.Fatalf("banner lacks %q:\n%s", want, banner)
		}
	}
	m := regexp.MustCompile(`-H 'Authorization: Bearer (pt_[a-z0-9]+)' -H 'Content-Type: application/json' -d '([^']+)'`).FindStringSubmatch(banner)
	if m == nil {
		t.Fatalf("no curl line:\n%s", banner)
	}
	status, body := call(t, "POST", base+"/v1/messages", m[1], m[2])
	if status != 201 || body["thread"].(map[string]any)["id"] != "th_1" {
		t.Fatalf("the demo curl: %d %v", status, body)
	}
	modTok := regexp.MustCompile(`ainotes:mod\s+\S+\s+(pt_[a-z0-9]+)`).FindStringSubmatch(banner)
	status, body = call(t, "GET", base+"/v1/whoami", modTok[1], "")
	if status != 200 || body["label"] != "mod" {
		t.Fatalf("mod whoami: %d %v", status, body)
	}
}

// TestServeWithTokensFileAndExternalDynamoDB: --dynamodb URL, --table,
// --realm and --tokens together.
func TestServeWithTokensFileAndExternalDynamoDB(t *testing.T) {
	db, err := localdb.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	file := filepath.Join(t.TempDir(), "tokens.json")
	tokens := `[{"token":"agent-secret-0123456789","identity":"labs:alice","rights":["read","write"]},
	            {"token":"human-secret-0123456789","identity":"human:hana","rights":["read"],"label":"boss"}]`
	if err := os.WriteFile(file, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	base, out := startServe(t, "--dynamodb", db.URL, "--table", "ext", "--realm", "labs", "--tokens", file)
	if strings.Contains(out.String(), "pt_") {
		t.Fatalf("demo tokens printed for an external store: %s", out.String())
	}
	status, body := call(t, "POST", base+"/v1/messages", "agent-secret-0123456789", `{"kind":"ask","body":"hi"}`)
	if status != 201 {
		t.Fatalf("post with a file token: %d %v", status, body)
	}
	status, body = call(t, "GET", base+"/v1/whoami", "human-secret-0123456789", "")
	if status != 200 || body["identity"] != "human:hana" || len(body["rights"].([]any)) != 4 {
		t.Fatalf("human from file: %d %v", status, body)
	}
	// The same table, read by the admin CLI: tokens are there, hashed.
	code, list, _ := runCLI(t, "token", "list", "--dynamodb", db.URL, "--table", "ext")
	if code != 0 || !strings.Contains(list, "labs:alice") || strings.Contains(list, "agent-secret") {
		t.Fatalf("list: %q", list)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte(`[{"token":"x","identity":"labs:a","rights":["read"],"extra":1}]`), 0o600)
	if code, _, errOut := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--dynamodb", db.URL, "--tokens", bad); code != 1 || !strings.Contains(errOut, "extra") {
		t.Fatalf("a bad tokens file: %d %q", code, errOut)
	}
}

// TestOfficialTypeScriptClient: the official MCP TypeScript client
// (@modelcontextprotocol/sdk, installed by `make test`) connects to the
// server `make run` starts, lists the tools, posts an ask, answers it from a
// second token, reads the thread and meets a refusal.
func TestOfficialTypeScriptClient(t *testing.T) {
	dir, err := filepath.Abs("../../infra/mcpapi/tsclient")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (make test installs it): %v", err)
	}
	base, out := startServe(t)
	tok := func(who string) string {
		m := regexp.MustCompile(who + `\s+\S+\s+(pt_[a-z0-9]+)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no token for %s", who)
		}
		return m[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", "--strict", base, tok("ainotes:alice"), tok("ainotes:bob"))
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Tools    []string       `json:"tools"`
		Thread   string         `json:"thread"`
		State    string         `json:"state"`
		Awaiting map[string]any `json:"awaiting"`
		Root     struct{ ID, From, Body string }
		Reply    struct{ ID, From, Kind string }
		Refusal  struct {
			IsError bool   `json:"isError"`
			Reason  string `json:"reason"`
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output %q: %v", stdout.String(), err)
	}
	var want []string
	for _, op := range core.AllOperations() {
		want = append(want, op.Name)
	}
	slices.Sort(want)
	if strings.Join(got.Tools, " ") != strings.Join(want, " ") {
		t.Fatalf("tools %v, want the operation table's %v", got.Tools, want)
	}
	if got.State != "answered" || got.Root.From != "ainotes:alice" || got.Reply.From != "ainotes:bob" || got.Reply.Kind != "answer" || got.Awaiting["identity"] != "ainotes:alice" {
		t.Fatalf("thread as the client read it: %+v", got)
	}
	if !got.Refusal.IsError || got.Refusal.Reason != "self_reply" {
		t.Fatalf("refusal as the client saw it: %+v", got.Refusal)
	}
	// The same thread over plain HTTP.
	status, body := call(t, "GET", base+"/v1/threads/"+got.Thread, tok("ainotes:bob"), "")
	if status != 200 || body["message_count"].(float64) != 2 {
		t.Fatalf("HTTP read of the client's thread: %d %v", status, body)
	}
}
