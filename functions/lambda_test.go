package functions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/lambda"
	"github.com/ainotes/parley/infra/localdb"
	"github.com/ainotes/parley/infra/testenv"
)

// emulated is one function's bootstrap running under the emulator.
type emulated struct {
	url    string
	stdout *testenv.SyncBuffer
	stderr *testenv.SyncBuffer
	cmd    *exec.Cmd
}

func (e *emulated) stop() {
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
}

// handedOut remembers the ports given to emulators in this process: a port
// closed here can come back from the next Listen(":0"), and two emulators
// (or one emulator's two addresses) must never share one.
var handedOut = struct {
	sync.Mutex
	ports map[string]bool
}{ports: map[string]bool{}}

func freePort(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.ports[addr] {
			handedOut.ports[addr] = true
			return addr
		}
	}
}

// buildHost builds every function for this machine with the Lambda build flags.
func buildHost(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", dir+"/", "./...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return dir
}

// startEmulator runs one bootstrap under aws-lambda-rie on free loopback
// ports (never the runtime API's default 9001).
func startEmulator(t testing.TB, rie, bootstrap string, env []string) *emulated {
	t.Helper()
	addr, api := freePort(t), freePort(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", api, bootstrap)
	cmd.Env = append(os.Environ(), env...)
	e := &emulated{url: "http://" + addr + "/2015-03-31/functions/function/invocations", stdout: &testenv.SyncBuffer{}, stderr: &testenv.SyncBuffer{}, cmd: cmd}
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return e
		}
	}
	t.Fatalf("emulator for %s did not listen: %s", bootstrap, e.stderr.String())
	return nil
}

// call invokes the function with an event and decodes its answer into out.
func (e *emulated) call(t testing.TB, event []byte, out any) {
	t.Helper()
	res, err := http.Post(e.url, "application/json", bytes.NewReader(event))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, out); res.StatusCode != 200 || err != nil {
		t.Fatalf("invocation answered %d %q (%v)\nstderr: %s", res.StatusCode, raw, err, e.stderr.String())
	}
}

// invoke invokes an HTTP function with an API Gateway event.
func (e *emulated) invoke(t testing.TB, event []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	var out events.APIGatewayV2HTTPResponse
	if e.call(t, event, &out); out.StatusCode == 0 {
		t.Fatalf("not an API Gateway response\nstderr: %s", e.stderr.String())
	}
	return out
}

// emulatorPath is the built emulator's path (make test builds it).
func emulatorPath(t testing.TB) string {
	t.Helper()
	rie, err := filepath.Abs("../bin/aws-lambda-rie")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rie); err != nil {
		t.Fatalf("the emulator is not built (make test and make bench build bin/aws-lambda-rie): %v", err)
	}
	return rie
}

// embeddedTable starts the embedded DynamoDB server on loopback with a
// table holding the example tokens of events/tokens.json, and returns its
// URL.
func embeddedTable(t testing.TB, table string) string {
	t.Helper()
	db, err := localdb.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	client, err := config.DynamoDB(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	store, _ := dynamo.New(client, table, dynamo.Options{})
	svc, _ := core.NewService(store, core.Options{})
	var tokens []struct {
		Token, Identity, Label string
		Rights                 []string
	}
	raw, err := os.ReadFile("../events/tokens.json")
	if err != nil || json.Unmarshal(raw, &tokens) != nil {
		t.Fatalf("events/tokens.json: %v", err)
	}
	for _, tk := range tokens {
		if _, err := svc.ImportToken(ctx, tk.Token, core.TokenSpec{Identity: tk.Identity, Rights: tk.Rights, Label: tk.Label}); err != nil {
			t.Fatal(err)
		}
	}
	return db.URL
}

// startAll starts the named functions' bootstraps under the emulator, side by side.
func startAll(t testing.TB, rie, bin string, names []string, env []string) map[string]*emulated {
	t.Helper()
	fns := map[string]*emulated{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := startEmulator(t, rie, filepath.Join(bin, name), env)
			mu.Lock()
			fns[name] = e
			mu.Unlock()
		}()
	}
	wg.Wait()
	return fns
}

// TestFunctionsUnderEmulator builds every function for this machine, runs
// each bootstrap under the AWS Lambda Runtime Interface Emulator against an
// embedded DynamoDB server reached over loopback, and replays the events/
// payloads as one flow across functions: ask → answer → decide → confirm →
// close → reads → reopen → MCP.
func TestFunctionsUnderEmulator(t *testing.T) {
	rie := emulatorPath(t)
	dbURL := embeddedTable(t, "parley-emulated")
	bin := buildHost(t)
	env := []string{"PARLEY_TABLE=parley-emulated", "PARLEY_DYNAMODB=" + dbURL, "PARLEY_TOKEN_CACHE_TTL=30s", "AWS_REGION=eu-west-1", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"PARLEY_PUSH_KEY=" + pushKey} // every profile on
	// Every function of the table, and MCP's.
	ops := []string{lambda.MCP}
	for _, op := range core.AllOperations() {
		ops = append(ops, op.Name)
	}
	fns := startAll(t, rie, bin, ops, env)

	var subscription string // subscribe's answer, for unsubscribe's path
	flow := []struct {
		event, function string
		status          int
		check           func(t *testing.T, body map[string]any)
	}{
		{"get_manifest", "get_manifest", 200, func(t *testing.T, b map[string]any) {
			if b["parley"] != "1" || len(b["acts"].([]any)) != 13 || len(b["operations"].([]any)) != len(core.AllOperations()) {
				t.Fatalf("manifest %v", b)
			}
		}},
		{"whoami", "whoami", 200, func(t *testing.T, b map[string]any) {
			if b["identity"] != "ainotes:alice" {
				t.Fatalf("%v", b)
			}
		}},
		{"post", "post", 201, func(t *testing.T, b map[string]any) {
			if th := b["thread"].(map[string]any); th["id"] != "th_1" || th["state"] != "open" {
				t.Fatalf("%v", b)
			}
		}},
		{"post_answer", "post", 201, func(t *testing.T, b map[string]any) {
			if th := b["thread"].(map[string]any); th["state"] != "answered" || th["proposal"] != true {
				t.Fatalf("%v", b)
			}
		}},
		{"post_decide", "post", 201, func(t *testing.T, b map[string]any) {
			if th := b["thread"].(map[string]any); th["state"] != "decided" || th["proposal"] != true {
				t.Fatalf("%v", b)
			}
		}},
		{"queue", "queue", 200, func(t *testing.T, b map[string]any) {
			l := b["threads"].([]any)
			if len(l) != 1 || l[0].(map[string]any)["why"] != "proposal" || l[0].(map[string]any)["message"].(map[string]any)["kind"] != "decide" {
				t.Fatalf("the creator's decide in the review queue: %v", b)
			}
		}},
		{"confirm", "confirm", 200, func(t *testing.T, b map[string]any) {
			if b["state"] != "decided" || b["proposal"] != false || b["state_label"] != "KI · mod" {
				t.Fatalf("%v", b)
			}
		}},
		{"mark", "mark", 200, func(t *testing.T, b map[string]any) {
			if b["state"] != "closed" || b["proposal"] != false {
				t.Fatalf("%v", b)
			}
		}},
		{"get_thread", "get_thread", 200, func(t *testing.T, b map[string]any) {
			if b["state"] != "closed" || b["message_count"].(float64) != 3 {
				t.Fatalf("%v", b)
			}
		}},
		{"list_threads", "list_threads", 200, func(t *testing.T, b map[string]any) {
			if l := b["threads"].([]any); len(l) != 1 {
				t.Fatalf("%v", b)
			}
		}},
		{"events", "events", 200, func(t *testing.T, b map[string]any) {
			var chain []string
			for _, e := range b["events"].([]any) {
				chain = append(chain, fmt.Sprint(e.(map[string]any)["to"]))
			}
			if strings.Join(chain, ",") != "open,answered,decided,decided,closed" {
				t.Fatalf("events %v", chain)
			}
		}},
		{"inbox", "inbox", 200, func(t *testing.T, b map[string]any) {
			if _, ok := b["cursor"]; !ok {
				t.Fatalf("%v", b)
			}
		}},
		{"mcp_tools_call", "mcp", 200, func(t *testing.T, b map[string]any) {
			res := b["result"].(map[string]any)
			if res["isError"] != true || res["structuredContent"].(map[string]any)["error"].(map[string]any)["reason"] != "thread_closed" {
				t.Fatalf("posting into the closed thread over MCP: %v", b)
			}
		}},
		{"reopen", "reopen", 200, func(t *testing.T, b map[string]any) {
			if b["state"] != "open" || b["state_origin"] != "user" {
				t.Fatalf("%v", b)
			}
		}},
		{"mcp_tools_list", "mcp", 200, func(t *testing.T, b map[string]any) {
			if n := len(b["result"].(map[string]any)["tools"].([]any)); n != len(core.AllOperations()) {
				t.Fatalf("%d tools", n)
			}
		}},
		{"mcp_tools_call", "mcp", 200, func(t *testing.T, b map[string]any) {
			res := b["result"].(map[string]any)
			if res["isError"] == true || res["structuredContent"].(map[string]any)["message"].(map[string]any)["from"].(map[string]any)["identity"] != "ainotes:bob" {
				t.Fatalf("MCP post after reopen: %v", b)
			}
		}},
		{"post_assert", "post", 201, func(t *testing.T, b map[string]any) {
			if cl := b["claim"].(map[string]any); cl["id"] != "cl_1" || cl["state"] != "unverified" {
				t.Fatalf("%v", b)
			}
		}},
		{"get_claim", "get_claim", 200, func(t *testing.T, b map[string]any) {
			if b["id"] != "cl_1" || len(b["evidence"].([]any)) != 1 || b["author"].(map[string]any)["identity"] != "ainotes:alice" {
				t.Fatalf("%v", b)
			}
		}},
		{"list_claims", "list_claims", 200, func(t *testing.T, b map[string]any) {
			if l := b["claims"].([]any); len(l) != 1 {
				t.Fatalf("%v", b)
			}
		}},
		{"subscribe", "subscribe", 201, func(t *testing.T, b map[string]any) {
			subscription, _ = b["id"].(string)
			if !strings.HasPrefix(subscription, "sub_") || !strings.HasPrefix(fmt.Sprint(b["secret"]), "whsec_") || b["identity"] != "ainotes:bob" {
				t.Fatalf("%v", b)
			}
		}},
		{"list_subscriptions", "list_subscriptions", 200, func(t *testing.T, b map[string]any) {
			l := b["subscriptions"].([]any)
			if len(l) != 1 || l[0].(map[string]any)["id"] != subscription || strings.Contains(fmt.Sprint(b), "whsec_") {
				t.Fatalf("one subscription, no secret: %v", b)
			}
		}},
		{"unsubscribe", "unsubscribe", 200, func(t *testing.T, b map[string]any) {
			if b["id"] != subscription {
				t.Fatalf("%v", b)
			}
		}},
		{"create_token", "create_token", 201, func(t *testing.T, b map[string]any) {
			if b["identity"] != "ainotes:carol" || !strings.HasPrefix(fmt.Sprint(b["secret"]), "pt_") {
				t.Fatalf("%v", b)
			}
		}},
		{"list_tokens", "list_tokens", 200, func(t *testing.T, b map[string]any) {
			if l := b["tokens"].([]any); len(l) != 5 || strings.Contains(fmt.Sprint(b), "pt_") {
				t.Fatalf("five tokens, no secret: %v", b)
			}
		}},
		{"revoke_token", "revoke_token", 200, func(t *testing.T, b map[string]any) {
			if b["identity"] != "ainotes:bob" || b["revoked_at"] == nil {
				t.Fatalf("%v", b)
			}
		}},
	}
	for i, step := range flow {
		t.Run(fmt.Sprintf("%02d_%s", i, step.event), func(t *testing.T) {
			event, err := os.ReadFile("../events/" + step.event + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if step.event == "unsubscribe" { // the id subscribe made, not the sample's
				event = bytes.ReplaceAll(event, []byte("sub_0123456789abcdef"), []byte(subscription))
			}
			res := fns[step.function].invoke(t, event)
			if res.StatusCode != step.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, step.status, res.Body)
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(res.Body), &body); err != nil {
				t.Fatalf("body %q", res.Body)
			}
			step.check(t, body)
			if id := res.Headers["X-Request-Id"]; id != "evt-"+step.event {
				t.Fatalf("request id %q: API Gateway's id is not carried", id)
			}
		})
	}

	// Every function initialised under the emulator, and its own output on
	// stdout is JSON log lines only (the emulator adds START/END/REPORT).
	initReport := regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	for _, op := range ops {
		e := fns[op]
		if initReport.FindString(e.stdout.String()+e.stderr.String()) == "" {
			t.Errorf("%s: no INIT REPORT line", op)
		}
		sc := bufio.NewScanner(strings.NewReader(e.stdout.String()))
		requests := 0
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "{"):
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Errorf("%s: not JSON: %q", op, line)
				}
				if m["msg"] == "request" {
					requests++
				}
			case strings.HasPrefix(line, "START RequestId"), strings.HasPrefix(line, "END RequestId"), strings.HasPrefix(line, "REPORT RequestId"):
			default:
				t.Errorf("%s: stray stdout line %q", op, line)
			}
		}
		if requests == 0 && op != "get_manifest" || op == "get_manifest" && requests != 1 {
			t.Errorf("%s: %d request log lines", op, requests)
		}
	}
}
