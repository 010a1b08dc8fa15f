package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/lambda"
	"github.com/ainotes/parley/infra/push"
	"github.com/ainotes/parley/infra/testenv"
)

// This file checks the IAM of the deployed stack without an AWS account:
// template.yaml is expanded by the SAM translator (the Python package
// aws-sam-translator, the code the AWS::Serverless transform runs) into
// plain CloudFormation, and the roles it generates are evaluated — Allow,
// Deny, resources, dynamodb:LeadingKeys — against the DynamoDB requests
// each operation really makes, recorded from the real store.

// python is the interpreter with aws-sam-translator: $PARLEY_PYTHON, the
// repository's .venv (where `make test` installs it when python3 lacks
// it), else python3.
func python() string {
	if p := os.Getenv("PARLEY_PYTHON"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../.venv/bin/python"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "python3"
}

var expanded sync.Map // parameters as JSON → the expanded template

// expand runs the SAM transform on template.yaml with the given parameter
// values (the rest take their defaults) and returns plain CloudFormation.
func expand(t *testing.T, params map[string]string) tmpl {
	t.Helper()
	key, _ := json.Marshal(params)
	if v, ok := expanded.Load(string(key)); ok {
		return v.(tmpl)
	}
	req, err := json.Marshal(map[string]any{"template": map[string]any(loadTemplate(t)), "parameters": params})
	if err != nil {
		t.Fatal(err)
	}
	py := python()
	cmd := exec.Command(py, "testdata/sam_translate.py")
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s testdata/sam_translate.py (aws-sam-translator; `make test` installs it into .venv): %v\n%s", py, err, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("translator output: %v\n%s", err, stderr.String())
	}
	expanded.Store(string(key), tmpl(out))
	return out
}

// --- a small IAM evaluator, for DynamoDB requests on the one table

// statement is one IAM statement with its resources normalised: the
// table's ARN reads "table", its indexes "table/index/<name>", the push
// profile's delivery queue "queue".
type statement struct {
	Sid       string
	Effect    string
	Actions   []string
	Resources []string
	Condition map[string]map[string][]string
}

// request is one DynamoDB authorization IAM makes: an action on the table
// (or an index) for the items whose partition keys are LeadingKeys.
type request struct {
	Action      string   // dynamodb:PutItem, sqs:SendMessage
	Resource    string   // table, table/index/by_list, queue
	LeadingKeys []string // partition key values, for item operations
}

func (r request) String() string {
	if len(r.LeadingKeys) == 0 {
		return r.Action + " " + r.Resource
	}
	return r.Action + " " + r.Resource + " " + strings.Join(r.LeadingKeys, ",")
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, strs(e)...)
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

// resourceName normalises a statement's resource.
func resourceName(t *testing.T, v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ga, ok := v["Fn::GetAtt"].([]any); ok && fmt.Sprint(ga) == "[Table Arn]" {
			return "table"
		}
		if ga, ok := v["Fn::GetAtt"].([]any); ok && fmt.Sprint(ga) == "[PushQueue Arn]" {
			return "queue"
		}
		if sub, ok := v["Fn::Sub"].(string); ok && strings.HasPrefix(sub, "${Table.Arn}") {
			return "table" + strings.TrimPrefix(sub, "${Table.Arn}")
		}
	}
	t.Fatalf("resource %v: not the table, an index of it, the push queue or a plain ARN", v)
	return ""
}

func statementsOf(t *testing.T, doc any) []statement {
	d, _ := doc.(map[string]any)
	if d["Version"] != "2012-10-17" {
		t.Errorf("policy document without Version 2012-10-17: %v", d)
	}
	var out []statement
	for _, s := range d["Statement"].([]any) {
		sm := s.(map[string]any)
		st := statement{Effect: fmt.Sprint(sm["Effect"]), Actions: strs(sm["Action"]), Condition: map[string]map[string][]string{}}
		if sid, ok := sm["Sid"].(string); ok {
			st.Sid = sid
		}
		if _, ok := sm["NotAction"]; ok {
			t.Fatalf("NotAction in %v", sm)
		}
		if _, ok := sm["NotResource"]; ok {
			t.Fatalf("NotResource in %v", sm)
		}
		res := sm["Resource"]
		if l, ok := res.([]any); ok {
			for _, r := range l {
				st.Resources = append(st.Resources, resourceName(t, r))
			}
		} else {
			st.Resources = append(st.Resources, resourceName(t, res))
		}
		if c, ok := sm["Condition"].(map[string]any); ok {
			for op, kv := range c {
				st.Condition[op] = map[string][]string{}
				for k, v := range kv.(map[string]any) {
					st.Condition[op][k] = strs(v)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// like is IAM's StringLike: * and ? wildcards, case-sensitive.
func like(pattern, s string) bool {
	ok, _ := path.Match(strings.NewReplacer("[", "\\[", "]", "\\]", "\\", "\\\\").Replace(pattern), s)
	if strings.Contains(s, "/") || strings.Contains(pattern, "/") {
		// path.Match's * stops at '/'; IAM's does not.
		re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
		ok = regexp.MustCompile(re).MatchString(s)
	}
	return ok
}

func anyLike(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return like(p, s) })
}

// conditionHolds evaluates the condition operators these policies use on
// dynamodb:LeadingKeys (a multivalued key); any other is a test failure,
// never a guess.
func conditionHolds(t *testing.T, st statement, r request) bool {
	for op, kv := range st.Condition {
		for key, values := range kv {
			if key != "dynamodb:LeadingKeys" {
				t.Fatalf("statement %s: condition key %s is not evaluated here", st.Sid, key)
			}
			switch op {
			case "ForAnyValue:StringLike":
				if !slices.ContainsFunc(r.LeadingKeys, func(k string) bool { return anyLike(values, k) }) {
					return false
				}
			case "ForAllValues:StringLike":
				// True for an empty set: hence the Null check beside it.
				for _, k := range r.LeadingKeys {
					if !anyLike(values, k) {
						return false
					}
				}
			case "Null":
				absent := len(r.LeadingKeys) == 0
				if (values[0] == "true") != absent {
					return false
				}
			default:
				t.Fatalf("statement %s: condition operator %s is not evaluated here", st.Sid, op)
			}
		}
	}
	return true
}

// allowed is IAM's decision for one request: an explicit Deny wins, else
// an Allow is needed.
func allowed(t *testing.T, policy []statement, r request) bool {
	allow := false
	for _, st := range policy {
		if !anyLike(st.Actions, r.Action) || !anyLike(st.Resources, r.Resource) || !conditionHolds(t, st, r) {
			continue
		}
		if st.Effect == "Deny" {
			return false
		}
		allow = true
	}
	return allow
}

// roleOf returns the DynamoDB-relevant policy of a function's generated
// role: its inline statements. Managed policies may only be AWS's basic
// execution role (logs) and, with tracing, X-Ray's write policy.
func roleOf(t *testing.T, cfn tmpl, function string) (policy []statement, managed []string) {
	t.Helper()
	fn := cfn.m("Resources", function)
	if fn == nil || fn["Type"] != "AWS::Lambda::Function" {
		t.Fatalf("no generated function %s", function)
	}
	role := fmt.Sprint(fn["Properties"].(map[string]any)["Role"])
	roleName := strings.TrimSuffix(strings.TrimPrefix(role, "map[Fn::GetAtt:["), " Arn]]")
	props := cfn.m("Resources", roleName, "Properties")
	if props == nil {
		t.Fatalf("%s: role %s not found", function, role)
	}
	for _, arn := range strs(props["ManagedPolicyArns"]) {
		if arn == "<nil>" {
			continue
		}
		managed = append(managed, arn)
	}
	if ps, ok := props["Policies"].([]any); ok {
		for _, p := range ps {
			policy = append(policy, statementsOf(t, p.(map[string]any)["PolicyDocument"])...)
		}
	}
	return policy, managed
}

// --- what each operation asks of DynamoDB

// recorder notes every DynamoDB request a client makes, as the IAM
// authorizations it needs, under the operation being run.
type recorder struct {
	mu      sync.Mutex
	current string
	needs   map[string][]request
}

func (rec *recorder) option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("parley-iam-recorder",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					rec.record(awsmiddleware.GetOperationName(ctx), in.Parameters)
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	}
}

// sqsOption records an SQS client's requests the same way: SendMessage
// and SendMessageBatch are both authorized as sqs:SendMessage, on the
// queue the URL names ("queue" when it is the push queue).
func (rec *recorder) sqsOption(queueURL string) func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("parley-iam-recorder",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					op := awsmiddleware.GetOperationName(ctx)
					r := request{Action: "sqs:" + op, Resource: "another queue"}
					switch p := in.Parameters.(type) {
					case *sqs.SendMessageBatchInput:
						r.Action = "sqs:SendMessage"
						if aws.ToString(p.QueueUrl) == queueURL {
							r.Resource = "queue"
						}
					case *sqs.SendMessageInput:
						if aws.ToString(p.QueueUrl) == queueURL {
							r.Resource = "queue"
						}
					}
					rec.mu.Lock()
					if rec.current != "" {
						rec.needs[rec.current] = append(rec.needs[rec.current], r)
					}
					rec.mu.Unlock()
					return next.HandleInitialize(ctx, in)
				}), middleware.Before)
		})
	}
}

// as runs f with its requests recorded as op's.
func (rec *recorder) as(op string, f func()) {
	rec.mu.Lock()
	rec.current = op
	rec.mu.Unlock()
	defer func() {
		rec.mu.Lock()
		rec.current = ""
		rec.mu.Unlock()
	}()
	f()
}

func pk(item map[string]types.AttributeValue) string {
	if s, ok := item["pk"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return "?"
}

// authorizations is what IAM checks for one API call: the actions of its
// items (a transaction is authorized item by item, as PutItem, UpdateItem,
// DeleteItem and ConditionCheckItem).
func authorizations(op string, params any) []request {
	item := func(action string, key map[string]types.AttributeValue) request {
		return request{Action: "dynamodb:" + action, Resource: "table", LeadingKeys: []string{pk(key)}}
	}
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return []request{item("GetItem", in.Key)}
	case *dynamodb.PutItemInput:
		return []request{item("PutItem", in.Item)}
	case *dynamodb.UpdateItemInput:
		return []request{item("UpdateItem", in.Key)}
	case *dynamodb.DeleteItemInput:
		return []request{item("DeleteItem", in.Key)}
	case *dynamodb.BatchGetItemInput:
		r := request{Action: "dynamodb:BatchGetItem", Resource: "table"}
		for _, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				r.LeadingKeys = append(r.LeadingKeys, pk(k))
			}
		}
		return []request{r}
	case *dynamodb.QueryInput:
		if in.IndexName != nil {
			return []request{{Action: "dynamodb:Query", Resource: "table/index/" + *in.IndexName}}
		}
		return []request{{Action: "dynamodb:Query", Resource: "table"}}
	case *dynamodb.TransactWriteItemsInput:
		var out []request
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, item("PutItem", it.Put.Item))
			case it.Update != nil:
				out = append(out, item("UpdateItem", it.Update.Key))
			case it.Delete != nil:
				out = append(out, item("DeleteItem", it.Delete.Key))
			case it.ConditionCheck != nil:
				out = append(out, item("ConditionCheckItem", it.ConditionCheck.Key))
			}
		}
		return out
	}
	return []request{{Action: "dynamodb:" + op, Resource: "table"}}
}

func (rec *recorder) record(op string, params any) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.current == "" {
		return // setup (tokens), not an operation
	}
	rec.needs[rec.current] = append(rec.needs[rec.current], authorizations(op, params)...)
}

// operationNeeds runs every operation through the local server (both
// transports, the real store on the embedded DynamoDB server) in the
// variants that touch different items — a new thread, a reply, an
// idempotent post and its replay, the dialectic kinds, each state change,
// every listing — and returns the authorizations each needed. The MCP
// entry holds what MCP tool calls needed (the MCP function serves all).
func operationNeeds(t *testing.T) map[string][]request {
	t.Helper()
	rec := &recorder{needs: map[string][]request{}}
	o := core.Options{
		Limits: core.ReferenceLimits(), // with the rate limit: its counter is a write
		// The push profile runs with a key; Local lets a loopback URL in.
		Push: core.PushPolicy{Key: []byte("iam-test-push-key-0123456789abcdef"), Local: true},
	}
	env := testenv.On(t, testenv.Embedded, o, rec.option())
	cast := env.Cast(t)
	srv := httptest.NewServer(env.Handler(t))
	t.Cleanup(srv.Close)

	do := func(op, token, method, target string, body any, header map[string]string, want ...int) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			raw, _ := json.Marshal(body)
			rd = bytes.NewReader(raw)
		}
		req, _ := http.NewRequest(method, srv.URL+target, rd)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec.mu.Lock()
		rec.current = op
		rec.mu.Unlock()
		res, err := http.DefaultClient.Do(req)
		rec.mu.Lock()
		rec.current = ""
		rec.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if !slices.Contains(want, res.StatusCode) {
			t.Fatalf("%s %s %s: status %d, want %v: %s", op, method, target, res.StatusCode, want, raw)
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return m
	}
	post := func(token string, body map[string]any, header map[string]string, want ...int) map[string]any {
		return do("post", token, "POST", "/v1/messages", body, header, want...)
	}
	id := func(m map[string]any, path ...string) string {
		var cur any = m
		for _, p := range path {
			cur = cur.(map[string]any)[p]
		}
		return fmt.Sprint(cur)
	}

	do("get_manifest", "", "GET", "/v1/manifest", nil, nil, 200)
	do("get_manifest", "", "GET", "/.well-known/parley.json", nil, nil, 200)
	do("get_manifest", cast.Reader, "GET", "/v1/manifest", nil, nil, 200) // a token sent is checked
	do("get_manifest", "pt_not_a_token", "GET", "/.well-known/parley.json", nil, nil, 401)
	do("whoami", cast.Alice, "GET", "/v1/whoami", nil, nil, 200)

	ask := post(cast.Alice, map[string]any{"kind": "ask", "body": "Which region first?", "from": map[string]any{"extension": "planner"}}, nil, 201)
	th := id(ask, "thread", "id")
	answer := post(cast.Bob, map[string]any{"kind": "answer", "thread": th, "body": "eu-west-1."}, nil, 201)
	post(cast.Carol, map[string]any{"kind": "object", "thread": th, "parent": id(answer, "message", "id"), "body": "Latency to us-east?"}, nil, 201)
	key := map[string]string{"Idempotency-Key": "retry-7, attempt 2"}
	post(cast.Bob, map[string]any{"kind": "inform", "thread": th, "body": "Measured: 80 ms."}, key, 201)
	post(cast.Bob, map[string]any{"kind": "inform", "thread": th, "body": "Measured: 80 ms."}, key, 200) // the replay
	post(cast.Alice, map[string]any{"kind": "decide", "thread": th, "body": "eu-west-1 it is."}, nil, 201)
	claim := post(cast.Alice, map[string]any{"kind": "assert", "body": "eu-west-1 has arm64 Lambda.",
		"evidence": []any{map[string]any{"kind": "url", "ref": "https://aws.amazon.com/"}}}, nil, 201)
	cl := id(claim, "claim", "id")
	post(cast.Bob, map[string]any{"kind": "attest", "claim": cl, "body": "Confirmed.", "evidence": []any{map[string]any{"kind": "url", "ref": "https://example.com/a"}}}, nil, 201)
	post(cast.Verifier, map[string]any{"kind": "verify", "claim": cl, "body": "Checked the table."}, nil, 201)
	post(cast.Carol, map[string]any{"kind": "refute", "claim": cl, "body": "Not in every AZ.", "evidence": []any{map[string]any{"kind": "url", "ref": "https://example.com/b"}}}, nil, 201)
	post(cast.Alice, map[string]any{"kind": "assert", "body": "eu-west-1 has arm64 Lambda in all AZs.", "supersedes": []any{cl},
		"evidence": []any{map[string]any{"kind": "url", "ref": "https://aws.amazon.com/x"}}}, nil, 201)

	do("confirm", cast.Mod, "POST", "/v1/threads/"+th+"/confirm", map[string]any{"state": "decided"}, nil, 200)
	do("mark", cast.Mod, "POST", "/v1/threads/"+th+"/mark", map[string]any{"state": "closed"}, nil, 200)
	do("reopen", cast.Human, "POST", "/v1/threads/"+th+"/reopen", nil, nil, 200)
	second := id(post(cast.Alice, map[string]any{"kind": "ask", "body": "And the second region?"}, nil, 201), "thread", "id")
	do("mark", cast.Alice, "POST", "/v1/threads/"+second+"/mark", map[string]any{"state": "deferred"}, nil, 200) // a model's proposal

	do("get_thread", cast.Bob, "GET", "/v1/threads/"+th, nil, nil, 200)
	do("list_threads", cast.Bob, "GET", "/v1/threads", nil, nil, 200)
	do("list_threads", cast.Bob, "GET", "/v1/threads?state=answered", nil, nil, 200)
	do("events", cast.Bob, "GET", "/v1/events?thread="+th, nil, nil, 200)
	do("events", cast.Bob, "GET", "/v1/events", nil, nil, 200)
	do("inbox", cast.Alice, "GET", "/v1/inbox", nil, nil, 200)
	do("inbox", cast.Human, "GET", "/v1/inbox", nil, nil, 200)
	do("queue", cast.Mod, "GET", "/v1/queue", nil, nil, 200)
	do("get_claim", cast.Bob, "GET", "/v1/claims/"+cl, nil, nil, 200)
	do("list_claims", cast.Bob, "GET", "/v1/claims", nil, nil, 200)
	do("list_claims", cast.Bob, "GET", "/v1/claims?thread="+th, nil, nil, 200)
	do("list_claims", cast.Bob, "GET", "/v1/claims?state=superseded", nil, nil, 200)

	hook := map[string]any{"url": "http://127.0.0.1:9/hook", "events": []any{"turn", "state"}}
	sub := do("subscribe", cast.Alice, "POST", "/v1/subscriptions", hook, nil, 201)
	do("subscribe", cast.Bob, "POST", "/v1/subscriptions", map[string]any{"url": "http://127.0.0.1:9/hook", "events": []any{"message"}, "thread": th}, nil, 201)
	do("list_subscriptions", cast.Alice, "GET", "/v1/subscriptions", nil, nil, 200)
	do("unsubscribe", cast.Alice, "DELETE", "/v1/subscriptions/"+id(sub, "id"), nil, nil, 200)

	tok := do("create_token", cast.Human, "POST", "/v1/tokens", map[string]any{"identity": "ainotes:zed", "rights": []any{"read"}}, nil, 201)
	do("list_tokens", cast.Human, "GET", "/v1/tokens", nil, nil, 200)
	do("subscribe", id(tok, "secret"), "POST", "/v1/subscriptions", hook, nil, 201) // a revoked token's subscriptions stop
	do("revoke_token", cast.Human, "DELETE", "/v1/tokens/"+id(tok, "id"), nil, nil, 200)

	rpc := func(token, method string, params any) {
		do("mcp", token, "POST", "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, map[string]string{"MCP-Protocol-Version": "2025-06-18"}, 200)
	}
	rpc(cast.Alice, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "iam-test", "version": "1"}})
	rpc(cast.Alice, "tools/list", map[string]any{})
	rpc(cast.Alice, "tools/call", map[string]any{"name": "post", "arguments": map[string]any{"kind": "ask", "body": "Over MCP?"}})
	rpc(cast.Human, "tools/call", map[string]any{"name": "create_token", "arguments": map[string]any{"identity": "ainotes:yan", "rights": []any{"read"}}})
	rpc(cast.Bob, "tools/call", map[string]any{"name": "subscribe", "arguments": hook})

	for _, op := range core.AllOperations() {
		if _, ran := rec.needs[op.Name]; !ran && op.Name != "get_manifest" {
			t.Errorf("the scenario never ran %s", op.Name)
		}
	}
	return rec.needs
}

// pushNeeds runs the push profile's AWS path on the strict backend (moto,
// with its DynamoDB stream and SQS) and returns the authorizations each
// push function needed, DynamoDB's and SQS's. Subscriptions of every
// kind, a conversation; the table's stream read back as Lambda hands it
// over, through the template's filter — every record the stream function
// reads must pass it, and the others (tokens, subscriptions, counters) do
// not — into StreamHandler, onto a real queue; the queued deliveries into
// QueueHandler: a receiver that accepts, one that fails (its retry goes
// back on the queue), a subscription whose token was revoked (dropped)
// and one unsubscribed meanwhile.
func pushNeeds(t *testing.T, filter []any) map[string][]request {
	t.Helper()
	rec := &recorder{needs: map[string][]request{}}
	env := testenv.On(t, testenv.Strict, core.Options{Push: core.PushPolicy{Key: []byte(testPushKey), Local: true}}, rec.option())
	env.EnableStream(t)
	ctx := context.Background()
	svc := env.Service
	cast := env.Cast(t)
	auth := func(secret string) core.Caller {
		t.Helper()
		c, err := svc.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var mu sync.Mutex
	received := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	subscribe := func(c core.Caller, path string, events ...string) string {
		t.Helper()
		sub, err := svc.Subscribe(ctx, c, core.SubscribeInput{URL: rcv.URL + path, Events: events})
		if err != nil {
			t.Fatal(err)
		}
		return sub.ID
	}
	alice, bob, carol := auth(cast.Alice), auth(cast.Bob), auth(cast.Carol)
	subscribe(alice, "/ok", core.PushTurn, core.PushState, core.PushMessage)
	subscribe(bob, "/fail", core.PushMessage)
	gone := subscribe(carol, "/ok", core.PushState)
	zedSecret, zed, err := svc.CreateToken(ctx, core.TokenSpec{Identity: svc.Realm() + ":zed", Rights: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	subscribe(auth(zedSecret), "/ok", core.PushState)
	for _, p := range []struct {
		c    core.Caller
		body string
	}{{alice, `{"kind":"ask","body":"Which region first?","from":{"extension":"planner"}}`}, {bob, `{"kind":"answer","thread":"th_1","body":"eu-west-1."}`}, {alice, `{"kind":"decide","thread":"th_1","body":"eu-west-1 it is."}`}} {
		if _, err := svc.PostJSON(ctx, p.c, []byte(p.body)); err != nil {
			t.Fatal(err)
		}
	}

	// The stream, as Lambda would hand it over, through the filter.
	all := env.StreamEvent(t)
	var filtered events.DynamoDBEvent
	out := map[string]bool{} // the partition kinds the filter keeps away
	for _, r := range all.Records {
		raw, _ := json.Marshal(r)
		var record any
		_ = json.Unmarshal(raw, &record)
		_, reads := dynamo.DecodeRecord(r)
		pk := r.Change.Keys["pk"].String()
		switch ok := passes(t, filter, record); {
		case ok:
			filtered.Records = append(filtered.Records, r)
		case reads:
			t.Errorf("the filter keeps %s of %s/%s from the stream function, which reads it", r.EventName, pk, r.Change.Keys["sk"].String())
		default:
			out[regexp.MustCompile(`^[a-z]+[#_]`).FindString(pk)] = true
		}
	}
	t.Logf("the filter passed %d of %d stream records; kept away %v", len(filtered.Records), len(all.Records), slices.Sorted(maps.Keys(out)))
	if len(filtered.Records) == 0 || !out["tok#"] || !out["sub#"] || !out["subcount#"] {
		t.Errorf("the filter passed %d of %d records, kept away %v: want thread records in, tokens and subscriptions out", len(filtered.Records), len(all.Records), out)
	}

	client, err := config.SQS(ctx, env.URL)
	if err != nil {
		t.Fatal(err)
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(strings.ReplaceAll(env.Table, ".", "-") + "-iam")})
	if err != nil {
		t.Fatalf("moto's SQS: %v", err)
	}
	queueURL := aws.ToString(q.QueueUrl)
	queue := push.SQS{Client: sqs.New(client.Options(), rec.sqsOption(queueURL)), URL: queueURL}
	d, err := push.NewDeliverer(svc, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	rec.as(lambda.PushStream, func() {
		res, err := push.StreamHandler(d, queue)(ctx, filtered)
		if err != nil || len(res.BatchItemFailures) != 0 {
			t.Fatalf("the stream batch: %v %+v\n%s", err, res, env.Log.String())
		}
	})
	var queued []events.SQSMessage
	for empty := 0; empty < 2; {
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			empty++
		}
		for _, m := range got.Messages {
			queued = append(queued, events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), ReceiptHandle: aws.ToString(m.ReceiptHandle)})
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(queued) < 4 {
		t.Fatalf("%d deliveries queued", len(queued))
	}

	if _, err := svc.Unsubscribe(ctx, carol, core.UnsubscribeInput{ID: gone}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RevokeToken(ctx, zed.ID); err != nil {
		t.Fatal(err)
	}
	rec.as(lambda.PushDeliver, func() {
		res, err := push.QueueHandler(d, queue)(ctx, events.SQSEvent{Records: queued})
		if err != nil || len(res.BatchItemFailures) != 0 {
			t.Fatalf("the delivery batch: %v %+v\n%s", err, res, env.Log.String())
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if received["/ok"] == 0 || received["/fail"] == 0 {
		t.Errorf("the receiver saw %v", received)
	}
	// Each path was taken: a retry queued, a dropped delivery counted.
	if !slices.ContainsFunc(rec.needs[lambda.PushDeliver], func(r request) bool { return r.Action == "sqs:SendMessage" }) {
		t.Error("no failed delivery was queued again")
	}
	if !slices.ContainsFunc(rec.needs[lambda.PushDeliver], func(r request) bool {
		return r.Action == "dynamodb:GetItem" && strings.HasPrefix(r.LeadingKeys[0], "tok#")
	}) {
		t.Error("no delivery read its token")
	}
	for _, fn := range []string{lambda.PushStream, lambda.PushDeliver} {
		seen := map[string]bool{}
		for _, r := range rec.needs[fn] {
			kind := r.Action + " " + r.Resource
			for _, k := range r.LeadingKeys {
				kind += " " + regexp.MustCompile(`^[a-z]+[#_]`).FindString(k) + "…"
			}
			seen[kind] = true
		}
		t.Logf("%s made %d requests: %v", fn, len(rec.needs[fn]), slices.Sorted(maps.Keys(seen)))
	}
	return rec.needs
}

var writes = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem"}

// tokenFunctions may write token items (partition key tok#…): the two
// token operations, and MCP, which serves them as tools.
var tokenFunctions = []string{"CreateTokenFunction", "RevokeTokenFunction", "McpFunction"}

// noTableFunctions have no DynamoDB permission at all.
var noTableFunctions = []string{"ConsoleFunction"}

// exactly is, for the functions whose every grant is an item's, all they
// may do on the table: action → the partition kinds (key prefixes) it is
// allowed on. Every other action on every probed key is refused, and each
// grant is one the function was seen to use.
var exactly = map[string]map[string][]string{
	// Public, but a token that is sent is checked.
	"GetManifestFunction": {"dynamodb:GetItem": {"tok#"}},
	// Every subscription (the list index, then the items); a pending count
	// per planned delivery.
	"PushStreamFunction": {"dynamodb:BatchGetItem": {"sub#"}, "dynamodb:UpdateItem": {"sub#"}},
	// The delivery's subscription and its token; the outcome's count; a
	// revoked token's subscription removed with its slot.
	"PushDeliverFunction": {"dynamodb:GetItem": {"sub#", "tok#"}, "dynamodb:UpdateItem": {"sub#", "subcount#"}, "dynamodb:DeleteItem": {"sub#"}},
}

// queryOnly is where each of those functions may Query: nowhere but the
// stream function on the list index.
var queryOnly = map[string][]string{"PushStreamFunction": {"table/index/by_list"}}

// managedPolicies are the AWS managed policies a role may have: AWS's
// basic execution role (logs) everywhere, and the one SAM adds for each
// push function's event source (reading the stream; receiving and deleting
// the queue's messages).
var managedPolicies = map[string][]string{
	"PushStreamFunction":  {"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole", "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole"},
	"PushDeliverFunction": {"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole", "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole"},
}

func managedPoliciesOf(fn string) []string {
	if m, ok := managedPolicies[fn]; ok {
		return m
	}
	return []string{"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"}
}

func generatedFunctions(cfn tmpl) []string {
	var out []string
	for name, r := range cfn.m("Resources") {
		if r.(map[string]any)["Type"] == "AWS::Lambda::Function" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestGeneratedIAM: on the roles SAM generates, each function may do what
// its operation does and no write beyond it; read functions never write;
// only the token functions can write token items; the console has no
// DynamoDB access at all; get_manifest may only read token items; the
// push functions may do exactly what the push path was seen to do — the
// stream function read and count subscriptions, the delivery function
// read a subscription and its token and count the outcome — and only
// they may send to the push queue, and only to it.
func TestGeneratedIAM(t *testing.T) {
	tp := loadTemplate(t)
	cfn := expand(t, map[string]string{})
	needs := operationNeeds(t)
	var all []request
	for _, rs := range needs {
		all = append(all, rs...)
	}
	needs["mcp"] = all // MCP serves every operation as a tool
	maps.Copy(needs, pushNeeds(t, streamFilter(t, tp)))
	probes := []string{"tok#0123abcd", "th_1", "th_000000000001", "seq#thread", "rate#tk_x#1", "idem#x", "cl_000000000001", "sub#0123abcd", "subcount#tk_0123abcd"}
	indexes := []string{"table/index/by_state", "table/index/by_list", "table/index/by_awaiting", "table/index/by_events", "table/index/by_queue"}
	itemActions := []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:TransactGetItems", "dynamodb:Query"}

	functions := generatedFunctions(cfn)
	if len(functions) != len(core.AllOperations())+2+len(pushFunctions) {
		t.Errorf("%d functions generated, want one per operation (%d), MCP, the console and the two push functions", len(functions), len(core.AllOperations()))
	}
	for _, fn := range functions {
		t.Run(fn, func(t *testing.T) {
			policy, managed := roleOf(t, cfn, fn)
			if !slices.Equal(managed, managedPoliciesOf(fn)) {
				t.Errorf("managed policies %v, want %v", managed, managedPoliciesOf(fn))
			}
			for _, st := range policy {
				sqsStatement := slices.ContainsFunc(st.Actions, func(a string) bool { return strings.HasPrefix(a, "sqs:") })
				for _, a := range st.Actions {
					switch {
					case sqsStatement && a == "sqs:SendMessage" && slices.Contains(pushFunctions, fn):
					case sqsStatement:
						t.Errorf("statement %s: action %s (only the push functions send, to their queue, and nothing else)", st.Sid, a)
					case !strings.HasPrefix(a, "dynamodb:") || strings.Contains(a, "*"):
						t.Errorf("statement %s: action %s (only named DynamoDB actions belong here)", st.Sid, a)
					}
				}
				for _, r := range st.Resources {
					switch {
					case sqsStatement && r == "queue":
					case !sqsStatement && (r == "table" || r == "table/index/*" || r == "table/index/by_list"):
					default:
						t.Errorf("statement %s: resource %s", st.Sid, r)
					}
				}
			}
			// The push queue: its two functions may send to it; no one may
			// send anywhere else, or receive or delete through an inline grant.
			for _, a := range []string{"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:PurgeQueue"} {
				for _, q := range []string{"queue", "another queue"} {
					want := a == "sqs:SendMessage" && q == "queue" && slices.Contains(pushFunctions, fn)
					if got := allowed(t, policy, request{Action: a, Resource: q}); got != want {
						t.Errorf("%s may %s on %s: %v, want %v", fn, a, q, got, want)
					}
				}
			}
			if slices.Contains(noTableFunctions, fn) {
				if len(policy) != 0 {
					t.Fatalf("%s has table access: %+v", fn, policy)
				}
				return
			}
			op := opOf(fn)
			if len(needs[op]) == 0 {
				t.Fatalf("no recorded requests for %s", op)
			}
			// Everything the operation did is allowed.
			for _, r := range needs[op] {
				if !allowed(t, policy, r) {
					t.Errorf("%s needs %s, which the role does not allow", op, r)
				}
			}
			// No write the operation never made; none at all for a read.
			readOnly := false
			for _, o := range core.AllOperations() {
				if o.Name == op {
					readOnly = o.ReadOnly
				}
			}
			for _, w := range writes {
				for _, key := range probes {
					r := request{Action: w, Resource: "table", LeadingKeys: []string{key}}
					if !allowed(t, policy, r) {
						continue
					}
					if readOnly {
						t.Errorf("read operation %s may %s", op, r)
					}
					if !slices.ContainsFunc(needs[op], func(n request) bool { return n.Action == w }) {
						t.Errorf("%s may %s, which it never does", op, r)
					}
					if strings.HasPrefix(key, "tok#") && !slices.Contains(tokenFunctions, fn) {
						t.Errorf("%s may write token items: %s", fn, r)
					}
				}
			}
			// No read action beyond GetItem, BatchGetItem and Query; Query
			// alone on the indexes.
			for _, a := range []string{"dynamodb:Scan", "dynamodb:DescribeTable", "dynamodb:TransactGetItems", "dynamodb:PartiQLSelect", "dynamodb:GetRecords"} {
				if allowed(t, policy, request{Action: a, Resource: "table"}) {
					t.Errorf("%s may %s", fn, a)
				}
			}
			for _, a := range []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Scan"} {
				if allowed(t, policy, request{Action: a, Resource: "table/index/by_list", LeadingKeys: []string{"threads"}}) {
					t.Errorf("%s may %s on an index", fn, a)
				}
			}
			// The item-scoped functions: exactly their grants, each used.
			grants, scoped := exactly[fn]
			if !scoped {
				return
			}
			for _, a := range itemActions {
				for _, key := range probes {
					want := slices.ContainsFunc(grants[a], func(prefix string) bool { return strings.HasPrefix(key, prefix) })
					if got := allowed(t, policy, request{Action: a, Resource: "table", LeadingKeys: []string{key}}); got != want {
						t.Errorf("%s may %s on %s: %v, want %v", fn, a, key, got, want)
					}
				}
				if allowed(t, policy, request{Action: a, Resource: "table"}) {
					t.Errorf("%s may %s without naming its items", fn, a)
				}
			}
			for _, ix := range indexes {
				want := slices.Contains(queryOnly[fn], ix)
				if got := allowed(t, policy, request{Action: "dynamodb:Query", Resource: ix}); got != want {
					t.Errorf("%s may Query %s: %v, want %v", fn, ix, got, want)
				}
			}
			for a, prefixes := range grants {
				for _, prefix := range prefixes {
					if !slices.ContainsFunc(needs[op], func(n request) bool {
						return n.Action == a && slices.ContainsFunc(n.LeadingKeys, func(k string) bool { return strings.HasPrefix(k, prefix) })
					}) {
						t.Errorf("%s may %s on %s items, which it was never seen to do", fn, a, prefix)
					}
				}
			}
			for _, ix := range queryOnly[fn] {
				if !slices.ContainsFunc(needs[op], func(n request) bool { return n.Action == "dynamodb:Query" && n.Resource == ix }) {
					t.Errorf("%s may Query %s, which it was never seen to do", fn, ix)
				}
			}
		})
	}
}

// opOf maps a function's logical id to its operation: PostFunction → post,
// PushStreamFunction → push_stream.
func opOf(fn string) string {
	for _, op := range append(core.AllOperations(), &core.Operation{Name: "mcp"}, &core.Operation{Name: "console"},
		&core.Operation{Name: lambda.PushStream}, &core.Operation{Name: lambda.PushDeliver}) {
		if functionName(op.Name) == fn {
			return op.Name
		}
	}
	return ""
}

// TestGeneratedIAMWithEveryOption: with tracing, alarms, a budget, CORS, a
// custom domain and a push key switched on, the transform still succeeds,
// the only addition to the roles is X-Ray's write policy, and CORS carries
// the headers the protocol uses.
func TestGeneratedIAMWithEveryOption(t *testing.T) {
	base := expand(t, map[string]string{})
	cfn := expand(t, map[string]string{
		"Tracing": "Active", "AlarmEmail": "ops@example.com", "BudgetAmount": "20",
		"CorsOrigins": "https://app.example.com,http://localhost:5173",
		"DomainName":  "forum.example.com", "CertificateArn": "arn:aws:acm:eu-west-1:123456789012:certificate/12345678-1234-1234-1234-123456789012",
		"PushKey": testPushKey,
	})
	for _, fn := range generatedFunctions(cfn) {
		policy, managed := roleOf(t, cfn, fn)
		basePolicy, _ := roleOf(t, base, fn)
		if fmt.Sprint(policy) != fmt.Sprint(basePolicy) {
			t.Errorf("%s: the options changed its table policy", fn)
		}
		if want := append(slices.Clone(managedPoliciesOf(fn)), "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"); !slices.Equal(slices.Sorted(slices.Values(managed)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s with tracing: managed policies %v", fn, managed)
		}
		// The transform keeps the parameter, which CloudFormation resolves to Active.
		if fmt.Sprint(cfn.m("Resources", fn, "Properties")["TracingConfig"]) != "map[Mode:map[Ref:Tracing]]" {
			t.Errorf("%s: no active tracing", fn)
		}
	}
	for _, fn := range generatedFunctions(base) {
		if _, managed := roleOf(t, base, fn); !slices.Equal(managed, managedPoliciesOf(fn)) {
			t.Errorf("%s without tracing: managed policies %v", fn, managed)
		}
		if base.m("Resources", fn, "Properties")["TracingConfig"] != nil {
			t.Errorf("%s: tracing on by default", fn)
		}
	}
	raw := fmt.Sprint(cfn.m("Resources", "HttpApi", "Properties", "Body")["x-amazon-apigateway-cors"])
	for _, h := range []string{"Authorization", "Content-Type", "Idempotency-Key", "Mcp-Protocol-Version", "Mcp-Session-Id", "X-Request-Id", "Location", "Retry-After", "WWW-Authenticate", "HasCors", "Fn::Split"} {
		if !strings.Contains(raw, h) {
			t.Errorf("CORS configuration lacks %s: %s", h, raw)
		}
	}
	for _, r := range []string{"CustomDomain", "CustomDomainMapping", "Budget", "AlarmTopic", "AlarmEmailSubscription", "PushQueue", "PushDeadLetters", "PushDeadLettersAlarm"} {
		if cfn.m("Resources", r) == nil {
			t.Errorf("resource %s missing", r)
		}
	}
}

// TestGeneratedRoutes: every route of the generated HTTP API reaches the
// right function — the operation table's, the manifest's alias, every
// method of /mcp, the console, and the $default route — and nothing else.
func TestGeneratedRoutes(t *testing.T) {
	cfn := expand(t, map[string]string{})
	want := map[string]string{}
	for route, op := range routes() {
		want[route] = functionName(op)
	}
	want["GET /mcp"] = "McpFunction"
	want["DELETE /mcp"] = "McpFunction"
	want["GET /"] = "ConsoleFunction"
	want["GET /ui/{proxy+}"] = "ConsoleFunction"
	want["ANY $default"] = "ConsoleFunction"

	body := cfn.m("Resources", "HttpApi", "Properties", "Body")
	if body == nil {
		t.Fatal("the HTTP API has no OpenAPI body")
	}
	target := regexp.MustCompile(`/functions/\$\{([A-Za-z]+)\.Arn\}/invocations`)
	got := map[string]string{}
	for p, ms := range body["paths"].(map[string]any) {
		methods, ok := ms.(map[string]any)
		if !ok {
			t.Errorf("%s: not plain methods (a route of a conditional function?): %v", p, ms)
			continue
		}
		for method, spec := range methods {
			sm, _ := spec.(map[string]any)
			integ, ok := sm["x-amazon-apigateway-integration"].(map[string]any)
			if !ok {
				t.Errorf("%s %s: no plain integration (a route of a conditional function?): %v", method, p, spec)
				continue
			}
			if integ["payloadFormatVersion"] != "2.0" || integ["type"] != "aws_proxy" {
				t.Errorf("%s %s: integration %v", method, p, integ)
			}
			m := target.FindStringSubmatch(fmt.Sprint(integ["uri"]))
			if m == nil {
				t.Fatalf("%s %s: integration %v", method, p, integ["uri"])
			}
			if method == "x-amazon-apigateway-any-method" {
				method = "ANY"
			}
			got[strings.ToUpper(method)+" "+p] = m[1]
		}
	}
	for route, fn := range want {
		if got[route] != fn {
			t.Errorf("route %s → %q, want %s", route, got[route], fn)
		}
	}
	for route, fn := range got {
		if _, ok := want[route]; !ok {
			t.Errorf("unexpected route %s → %s", route, fn)
		}
	}
	// Each function of the API may be invoked by it; the push functions
	// by nothing but their event sources.
	for _, fn := range generatedFunctions(cfn) {
		if slices.Contains(pushFunctions, fn) {
			for name, r := range cfn.m("Resources") {
				if rm := r.(map[string]any); rm["Type"] == "AWS::Lambda::Permission" && fmt.Sprint(rm["Properties"].(map[string]any)["FunctionName"]) == "map[Ref:"+fn+"]" {
					t.Errorf("%s: %s lets something invoke it", fn, name)
				}
			}
			continue
		}
		found := false
		for _, r := range cfn.m("Resources") {
			rm := r.(map[string]any)
			if rm["Type"] == "AWS::Lambda::Permission" && fmt.Sprint(rm["Properties"].(map[string]any)["FunctionName"]) == "map[Ref:"+fn+"]" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no permission for API Gateway to invoke it", fn)
		}
	}
}

// TestGeneratedPush: in the plain CloudFormation SAM makes, each push
// function's role and event source mapping exist only with it (PushOn),
// and the mappings are the template's: the table's stream with the
// filter, bounded retries and partial batch failures; the queue in
// batches of five.
func TestGeneratedPush(t *testing.T) {
	tp := loadTemplate(t)
	cfn := expand(t, map[string]string{})
	mappings := map[string][]map[string]any{}
	for name, r := range cfn.m("Resources") {
		rm := r.(map[string]any)
		props, _ := rm["Properties"].(map[string]any)
		for _, fn := range pushFunctions {
			refersTo := fmt.Sprint(props["FunctionName"]) == "map[Ref:"+fn+"]" || name == fn || name == fn+"Role"
			if refersTo && rm["Condition"] != "PushOn" {
				t.Errorf("%s (%s) is made without the push profile: condition %v", name, rm["Type"], rm["Condition"])
			}
			if rm["Type"] == "AWS::Lambda::EventSourceMapping" && fmt.Sprint(props["FunctionName"]) == "map[Ref:"+fn+"]" {
				mappings[fn] = append(mappings[fn], props)
			}
		}
	}
	stream, queue := mappings["PushStreamFunction"], mappings["PushDeliverFunction"]
	if len(stream) != 1 || len(queue) != 1 {
		t.Fatalf("event source mappings: %d of the stream, %d of the queue", len(stream), len(queue))
	}
	var pattern string
	for _, e := range tp.m("Resources", "PushStreamFunction", "Properties", "Events") {
		pattern = fmt.Sprint(e.(map[string]any)["Properties"].(map[string]any)["FilterCriteria"])
	}
	s := stream[0]
	if fmt.Sprint(s["EventSourceArn"]) != "map[Fn::GetAtt:[Table StreamArn]]" || fmt.Sprint(s["FilterCriteria"]) != pattern || s["StartingPosition"] != "LATEST" ||
		fmt.Sprint(s["FunctionResponseTypes"]) != "[ReportBatchItemFailures]" || fmt.Sprint(s["BatchSize"]) != "100" || fmt.Sprint(s["MaximumBatchingWindowInSeconds"]) != "1" ||
		s["MaximumRetryAttempts"] == nil || fmt.Sprint(s["MaximumRecordAgeInSeconds"]) != "86400" {
		t.Errorf("the stream's mapping: %v", s)
	}
	q := queue[0]
	if fmt.Sprint(q["EventSourceArn"]) != "map[Fn::GetAtt:[PushQueue Arn]]" || fmt.Sprint(q["BatchSize"]) != "5" || fmt.Sprint(q["FunctionResponseTypes"]) != "[ReportBatchItemFailures]" {
		t.Errorf("the queue's mapping: %v", q)
	}
	// The table keeps its stream switch; the environment its key.
	if fmt.Sprint(cfn.m("Resources", "Table", "Properties")["StreamSpecification"]) != "map[Fn::If:[PushOn map[StreamViewType:NEW_AND_OLD_IMAGES] map[Ref:AWS::NoValue]]]" {
		t.Errorf("the table's stream: %v", cfn.m("Resources", "Table", "Properties")["StreamSpecification"])
	}
	for _, fn := range generatedFunctions(cfn) {
		vars := cfn.m("Resources", fn, "Properties", "Environment", "Variables")
		want := "map[Fn::If:[PushOn map[Ref:PushKey] ]]"
		if slices.Contains(pushFunctions, fn) {
			want = "map[Ref:PushKey]" // only there with PushOn
		}
		if got := fmt.Sprint(vars["PARLEY_PUSH_KEY"]); got != want {
			t.Errorf("%s: PARLEY_PUSH_KEY = %s, want %s", fn, got, want)
		}
	}
}
