// Package functions holds one tiny main per Lambda function; this test
// package checks that template.yaml, the Makefile and those mains agree with
// each other and with docs/protocol.md §10, and runs every function under the Lambda
// Runtime Interface Emulator.
package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"gopkg.in/yaml.v3"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/lambda"
)

// cfnYAML converts a YAML node to plain values, turning CloudFormation's
// short-form intrinsic tags into their long form: !Ref X → {"Ref": "X"},
// !GetAtt A.B → {"Fn::GetAtt": ["A", "B"]}, !Sub s → {"Fn::Sub": s}, …
func cfnYAML(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return cfnYAML(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = cfnYAML(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			l = append(l, cfnYAML(c))
		}
		v = l
	case yaml.AliasNode:
		return cfnYAML(n.Alias)
	default:
		if strings.HasPrefix(n.Tag, "!!") {
			_ = n.Decode(&v)
		} else {
			v = n.Value // a scalar under an intrinsic tag
		}
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v
	}
	tag := strings.TrimPrefix(n.Tag, "!")
	switch tag {
	case "Ref", "Condition":
		return map[string]any{tag: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			a, b, _ := strings.Cut(s, ".")
			return map[string]any{"Fn::GetAtt": []any{a, b}}
		}
	}
	return map[string]any{"Fn::" + tag: v}
}

type tmpl map[string]any

func (t tmpl) m(path ...string) map[string]any {
	var cur any = map[string]any(t)
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	out, _ := cur.(map[string]any)
	return out
}

func loadTemplate(t *testing.T) tmpl {
	t.Helper()
	raw, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	v, ok := cfnYAML(&n).(map[string]any)
	if !ok {
		t.Fatal("template.yaml is not a mapping")
	}
	return v
}

// functionName maps an operation to its logical id: post → PostFunction.
func functionName(op string) string {
	var b strings.Builder
	for _, part := range strings.Split(op, "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Function"
}

// routes is every route the HTTP API must have, with the function (by its
// operation name) that serves it: the operation table (every profile), the
// manifest's alias, every method of /mcp, the console, and the $default
// route ("ANY $default"), which the console function answers with Parley's
// own JSON 404 and 405.
func routes() map[string]string {
	r := map[string]string{}
	for _, op := range core.AllOperations() {
		r[op.Method+" "+op.Path] = op.Name
	}
	r["GET /.well-known/parley.json"] = "get_manifest"
	for _, m := range []string{"POST", "GET", "DELETE"} {
		r[m+" /mcp"] = lambda.MCP
	}
	r["GET /"] = lambda.Console
	r["GET /ui/{proxy+}"] = lambda.Console
	r["ANY $default"] = lambda.Console
	return r
}

// pushFunctions are the push profile's two functions, off the request
// path: events from the table's stream and the delivery queue, no route.
var pushFunctions = []string{functionName(lambda.PushStream), functionName(lambda.PushDeliver)}

var writeActions = regexp.MustCompile(`dynamodb:(PutItem|UpdateItem|DeleteItem|BatchWriteItem|ConditionCheckItem|\*)`)

// TestTemplate: every route has its function, every function its build
// target and main, the runtime is the same everywhere, and read operations
// hold no write action. (iam_test.go judges the generated roles in detail.)
func TestTemplate(t *testing.T) {
	tp := loadTemplate(t)
	if tp["Transform"] != "AWS::Serverless-2016-10-31" {
		t.Fatalf("Transform = %v", tp["Transform"])
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{}
	for _, op := range core.AllOperations() {
		readOnly[op.Name] = op.ReadOnly
	}
	globals := tp.m("Globals", "Function")
	resources := tp.m("Resources")
	served := map[string]string{} // route → function logical id
	var functions []string
	for name, r := range resources {
		res := r.(map[string]any)
		if res["Type"] != "AWS::Serverless::Function" {
			continue
		}
		functions = append(functions, name)
		props := res["Properties"].(map[string]any)
		prop := func(k string) any {
			if v, ok := props[k]; ok {
				return v
			}
			return globals[k]
		}
		t.Run(name, func(t *testing.T) {
			if prop("Runtime") != "provided.al2023" || fmt.Sprint(prop("Architectures")) != "[arm64]" || prop("Handler") != "bootstrap" {
				t.Fatalf("runtime %v, architectures %v, handler %v", prop("Runtime"), prop("Architectures"), prop("Handler"))
			}
			if meta, _ := res["Metadata"].(map[string]any); meta["BuildMethod"] != "makefile" {
				t.Fatalf("Metadata.BuildMethod = %v", meta["BuildMethod"])
			}
			target := regexp.MustCompile(`(?m)^build-` + name + `:\s*;\s*\$\(call lambda,([a-z_]+)\)$`).FindSubmatch(makefile)
			if target == nil {
				t.Fatalf("no build-%s target in the Makefile", name)
			}
			op := string(target[1])
			if functionName(op) != name {
				t.Fatalf("build-%s builds functions/%s", name, op)
			}
			if _, err := os.Stat(op + "/main.go"); err != nil {
				t.Fatalf("no functions/%s/main.go", op)
			}
			log, _ := props["LoggingConfig"].(map[string]any)
			if fmt.Sprint(log["LogGroup"]) != "map[Ref:LogGroup]" || log["LogFormat"] != "JSON" {
				t.Fatalf("LoggingConfig = %v: every function logs JSON to the one LogGroup (with retention)", log)
			}
			events, _ := props["Events"].(map[string]any)
			if len(events) == 0 {
				t.Fatal("no events")
			}
			if slices.Contains(pushFunctions, name) {
				// No route; TestTemplatePush judges their events.
				if res["Condition"] != "PushOn" {
					t.Fatalf("%s: condition %v, want PushOn", name, res["Condition"])
				}
				for _, e := range events {
					if ev := e.(map[string]any); ev["Type"] == "HttpApi" {
						t.Fatalf("%s has a route: %v", name, ev)
					}
				}
				events = nil
			} else if res["Condition"] != nil {
				t.Fatalf("condition %v on a function of the API", res["Condition"])
			}
			for _, e := range events {
				ev := e.(map[string]any)
				p := ev["Properties"].(map[string]any)
				if ev["Type"] != "HttpApi" || fmt.Sprint(p["ApiId"]) != "map[Ref:HttpApi]" {
					t.Fatalf("event %v", ev)
				}
				route := fmt.Sprint(p["Method"]) + " " + fmt.Sprint(p["Path"])
				if p["Method"] == nil && p["Path"] == nil {
					route = "ANY $default"
				}
				want, ok := routes()[route]
				if !ok || want != op {
					t.Fatalf("route %s is not %s's", route, op)
				}
				served[route] = name
			}
			policies := fmt.Sprint(props["Policies"])
			switch {
			case op == lambda.Console:
				if props["Policies"] != nil {
					t.Fatalf("%s has policies: %s", op, policies)
				}
			case readOnly[op]:
				if writeActions.MatchString(policies) || strings.Contains(policies, "Crud") || strings.Contains(policies, "Write") {
					t.Fatalf("read operation %s holds write rights: %s", op, policies)
				}
			}
			if strings.Contains(policies, "Scan") || strings.Contains(policies, "dynamodb:*") || strings.Contains(policies, "Policy:") {
				t.Fatalf("policy broader than needed (Scan, a wildcard or a SAM policy template): %s", policies)
			}
		})
	}
	for route, op := range routes() {
		if served[route] == "" {
			t.Errorf("route %s has no function (want %s)", route, functionName(op))
		}
	}
	sort.Strings(functions)
	targets := regexp.MustCompile(`(?m)^build-([A-Za-z]+):`).FindAllSubmatch(makefile, -1)
	var built []string
	for _, m := range targets {
		built = append(built, string(m[1]))
	}
	sort.Strings(built)
	if !slices.Equal(built, functions) {
		t.Errorf("Makefile targets %v, template functions %v", built, functions)
	}
	entries, _ := os.ReadDir(".")
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" && !slices.Contains(functions, functionName(e.Name())) {
			t.Errorf("functions/%s has no function in template.yaml", e.Name())
		}
	}
}

// TestTemplateTableMatchesTheStore: the table CloudFormation creates is the
// one infra/dynamo creates locally, and it is kept.
func TestTemplateTableMatchesTheStore(t *testing.T) {
	tp := loadTemplate(t)
	table := tp.m("Resources", "Table")
	props := table["Properties"].(map[string]any)
	// Retained on stack deletion and replacement; only a failed first
	// create (an empty table) is rolled back with the stack.
	if props["BillingMode"] != "PAY_PER_REQUEST" || table["DeletionPolicy"] != "RetainExceptOnCreate" || table["UpdateReplacePolicy"] != "Retain" {
		t.Fatalf("billing %v, deletion policy %v, update-replace policy %v", props["BillingMode"], table["DeletionPolicy"], table["UpdateReplacePolicy"])
	}
	if fmt.Sprint(props["PointInTimeRecoverySpecification"]) != "map[PointInTimeRecoveryEnabled:true]" {
		t.Fatalf("PITR: %v", props["PointInTimeRecoverySpecification"])
	}
	ttl := props["TimeToLiveSpecification"].(map[string]any)
	if ttl["AttributeName"] != dynamo.TTLAttribute || ttl["Enabled"] != true {
		t.Fatalf("TTL: %v", ttl)
	}
	if fmt.Sprint(props["DeletionProtectionEnabled"]) != "map[Ref:DeletionProtection]" || tp.m("Parameters", "DeletionProtection") == nil {
		t.Fatalf("deletion protection is not a parameter")
	}
	for _, o := range []string{"ApiUrl", "TableName", "McpEndpoint", "ExecuteApiUrl", "LogGroupName", "AccessLogGroupName"} {
		if tp.m("Outputs", o) == nil {
			t.Errorf("output %s missing", o)
		}
	}
	want := dynamo.TableInput("x")
	got := map[string]string{}
	for _, g := range props["GlobalSecondaryIndexes"].([]any) {
		gm := g.(map[string]any)
		keys := []string{}
		for _, k := range gm["KeySchema"].([]any) {
			km := k.(map[string]any)
			keys = append(keys, fmt.Sprint(km["AttributeName"], "/", km["KeyType"]))
		}
		proj := gm["Projection"].(map[string]any)
		got[gm["IndexName"].(string)] = strings.Join(keys, ",") + " " + fmt.Sprint(proj["ProjectionType"]) + fmt.Sprint(proj["NonKeyAttributes"])
	}
	if len(got) != len(want.GlobalSecondaryIndexes) {
		t.Fatalf("template has %d indexes, the store %d", len(got), len(want.GlobalSecondaryIndexes))
	}
	for _, g := range want.GlobalSecondaryIndexes {
		keys := []string{}
		for _, k := range g.KeySchema {
			keys = append(keys, fmt.Sprint(*k.AttributeName, "/", k.KeyType))
		}
		include := "<nil>"
		if len(g.Projection.NonKeyAttributes) > 0 {
			include = fmt.Sprint(toAny(g.Projection.NonKeyAttributes))
		}
		if w := strings.Join(keys, ",") + " " + string(g.Projection.ProjectionType) + include; got[*g.IndexName] != w {
			t.Errorf("index %s: template %q, store %q", *g.IndexName, got[*g.IndexName], w)
		}
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// parameterAccepts reports whether a value passes a parameter's
// constraints as CloudFormation checks them (AllowedPattern is a Java
// regular expression matched against the whole value; the patterns here
// use nothing RE2 reads differently).
func parameterAccepts(t *testing.T, p map[string]any, value string) bool {
	t.Helper()
	if pat, ok := p["AllowedPattern"].(string); ok && !regexp.MustCompile(`^(?:`+pat+`)$`).MatchString(value) {
		return false
	}
	if vs, ok := p["AllowedValues"].([]any); ok && !slices.ContainsFunc(vs, func(v any) bool { return fmt.Sprint(v) == value }) {
		return false
	}
	if p["Type"] == "Number" {
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return false
		}
		if lo, ok := p["MinValue"]; ok && n < toFloat(lo) {
			return false
		}
		if hi, ok := p["MaxValue"]; ok && n > toFloat(hi) {
			return false
		}
	}
	return true
}

func toFloat(v any) float64 {
	f, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f
}

// TestTemplateParameters: every parameter is constrained, its default
// passes, and every value a parameter that feeds the functions' environment
// admits is one the functions accept at start — a TokenCacheTTL of "30"
// once passed CloudFormation and then stopped every function.
func TestTemplateParameters(t *testing.T) {
	tp := loadTemplate(t)
	params := tp.m("Parameters")
	for name, p := range params {
		pm := p.(map[string]any)
		_, pattern := pm["AllowedPattern"]
		_, values := pm["AllowedValues"]
		_, minimum := pm["MinValue"]
		if !pattern && !values && !minimum {
			t.Errorf("parameter %s has no AllowedPattern, AllowedValues or MinValue", name)
		}
		if pm["Description"] == nil {
			t.Errorf("parameter %s has no Description", name)
		}
		if !parameterAccepts(t, pm, fmt.Sprint(pm["Default"])) {
			t.Errorf("parameter %s refuses its own default %q", name, pm["Default"])
		}
	}

	// Each parameter the functions' environment is made of: the values
	// tried are the admitted ones (AllowedValues) or examples of both
	// kinds. With each, the other parameters at their defaults, the
	// environment CloudFormation would give every function (Globals, and
	// a push function's own additions when the push profile is on) must
	// start a function, and the examples marked bad must be refused by the
	// parameter already.
	fed := map[string]bool{}
	for _, v := range tp.m("Globals", "Function", "Environment", "Variables") {
		for _, name := range parametersIn(tp, v) {
			fed[name] = true
		}
	}
	examples := map[string]struct{ good, bad []string }{
		"TokenCacheTTL": {[]string{"0", "0s", "30s", "1m", "5m30s", "1h30m", "250ms", "1.5s", "100us", "9999h"}, []string{"30", "-1s", "soon", "1d", "30 s", "s", "", "1h2m3s4ms", "99999h"}},
		"Realm":         {[]string{"ainotes", "a", "lab-2", "x_y", strings.Repeat("r", 32)}, []string{"", "Ainotes", "-lab", "has space", strings.Repeat("r", 33), "a:b"}},
		"RateLimit":     {[]string{"0", "1", "120", "100000"}, []string{"-1", "many", "100001"}},
		// Off ("none" is what --guided can type), openssl rand -hex 32,
		// -base64 32 and 48, the shortest, the longest.
		"PushKey": {[]string{"", "none", testPushKey, "q3J0b1NlY3JldEtleUZvclRlc3RpbmdPbmx5IQ+/0123456=", "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4", strings.Repeat("k", 32), strings.Repeat("!~", 128)},
			[]string{"None", "off", " ", strings.Repeat("k", 31), strings.Repeat("k", 257), "a key with spaces in it, long enough to pass", strings.Repeat("k", 32) + "\t", strings.Repeat("é", 32), strings.Repeat("k", 32) + "\n"}},
	}
	if !fed["Profiles"] || !fed["PushKey"] || !fed["Realm"] {
		t.Errorf("the environment is made of %v", fed)
	}
	for param := range fed {
		pm := params[param].(map[string]any)
		var good, bad []string
		if vs, ok := pm["AllowedValues"].([]any); ok {
			for _, v := range vs {
				good = append(good, fmt.Sprint(v))
			}
		} else if ex, ok := examples[param]; ok {
			good, bad = ex.good, ex.bad
		} else {
			t.Errorf("parameter %s has neither AllowedValues nor examples here", param)
		}
		for _, v := range good {
			if !parameterAccepts(t, pm, v) {
				t.Errorf("%s refuses %q", param, v)
				continue
			}
			for fn, vars := range environments(t, tp, map[string]string{param: v}) {
				if _, err := config.FromEnv(func(k string) string { return vars[k] }); err != nil {
					t.Errorf("%s=%q passes the template but stops %s: %v", param, v, fn, err)
				}
			}
		}
		for _, v := range bad {
			if parameterAccepts(t, pm, v) {
				vars := environments(t, tp, map[string]string{param: v})["Globals"]
				_, err := config.FromEnv(func(k string) string { return vars[k] })
				t.Errorf("%s admits %q (the functions then say: %v)", param, v, err)
			}
		}
	}
	// The realm the rules keep out.
	if !strings.Contains(fmt.Sprint(tp["Rules"]), "map[Ref:Realm] human") {
		t.Error(`no rule keeps Realm from being "human"`)
	}
}

// TestTemplateEnvironment: every variable the functions read is declared
// in Globals — SAM's `local invoke --env-vars` overrides only declared
// ones, so PARLEY_DYNAMODB is declared (empty: real DynamoDB) — and
// events/env.json sets nothing undeclared.
func TestTemplateEnvironment(t *testing.T) {
	tp := loadTemplate(t)
	declared := tp.m("Globals", "Function", "Environment", "Variables")
	var read []string
	vars := map[string]string{"PARLEY_TABLE": "t"}
	if _, err := config.FromEnv(func(k string) string { read = append(read, k); return vars[k] }); err != nil {
		t.Fatal(err)
	}
	for _, k := range read {
		if _, ok := declared[k]; !ok {
			t.Errorf("the functions read %s; Globals does not declare it", k)
		}
	}
	if v, ok := declared["PARLEY_DYNAMODB"]; !ok || v != "" {
		t.Errorf("PARLEY_DYNAMODB = %v, want declared and empty", v)
	}
	raw, err := os.ReadFile("../events/env.json")
	if err != nil {
		t.Fatal(err)
	}
	var envFile map[string]map[string]string
	if err := json.Unmarshal(raw, &envFile); err != nil {
		t.Fatal(err)
	}
	for scope, kv := range envFile {
		for k := range kv {
			if _, ok := declared[k]; !ok {
				t.Errorf("events/env.json sets %s (%s), which the template does not declare: sam local invoke would ignore it", k, scope)
			}
		}
	}
}

// TestTemplateOperations: logs with retention, access logs, alarms to the
// topic, the budget, CORS, the custom domain and tracing are there, each
// behind its switch.
func TestTemplateOperations(t *testing.T) {
	tp := loadTemplate(t)
	resources := tp.m("Resources")
	logGroups := 0
	for name, r := range resources {
		res := r.(map[string]any)
		if res["Type"] != "AWS::Logs::LogGroup" {
			continue
		}
		logGroups++
		if fmt.Sprint(tp.m("Resources", name, "Properties")["RetentionInDays"]) != "map[Ref:LogRetentionDays]" {
			t.Errorf("log group %s without the retention parameter", name)
		}
	}
	if logGroups != 2 {
		t.Errorf("%d log groups, want the functions' and the access log", logGroups)
	}

	api := tp.m("Resources", "HttpApi", "Properties")
	access := tp.m("Resources", "HttpApi", "Properties", "AccessLogSettings")
	if fmt.Sprint(access["DestinationArn"]) != "map[Fn::GetAtt:[AccessLogGroup Arn]]" {
		t.Errorf("access logs go to %v", access["DestinationArn"])
	}
	var format map[string]string
	if err := json.Unmarshal([]byte(fmt.Sprint(access["Format"])), &format); err != nil {
		t.Errorf("access log format is not JSON: %v", err)
	}
	for _, v := range []string{"$context.requestId", "$context.routeKey", "$context.status", "$context.responseLatency", "$context.integrationErrorMessage"} {
		if !slices.Contains(mapValues(format), v) {
			t.Errorf("access log format lacks %s", v)
		}
	}
	if fmt.Sprint(api["Auth"]) != "map[EnableIamAuthorizer:false]" {
		t.Errorf("HttpApi Auth = %v", api["Auth"])
	}

	cors := fmt.Sprint(api["CorsConfiguration"])
	for _, want := range []string{"HasCors", "AWS::NoValue", "Fn::Split", "Authorization Content-Type Idempotency-Key Mcp-Protocol-Version Mcp-Session-Id", "X-Request-Id Location Retry-After WWW-Authenticate"} {
		if !strings.Contains(cors, want) {
			t.Errorf("CORS lacks %q: %s", want, cors)
		}
	}

	alarms := map[string]bool{}
	for name, r := range resources {
		res := r.(map[string]any)
		if res["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		props := res["Properties"].(map[string]any)
		// Behind the alarms' switch: CreateAlarms, or a condition that
		// needs it (the push profile's alarm: PushAlarms).
		cond := fmt.Sprint(res["Condition"])
		switched := cond == "CreateAlarms" || strings.Contains(fmt.Sprint(tp.m("Conditions")[cond]), "map[Fn::And:[map[Condition:CreateAlarms]")
		if !switched || fmt.Sprint(props["AlarmActions"]) != "[map[Ref:AlarmTopic]]" || props["TreatMissingData"] != "notBreaching" {
			t.Errorf("alarm %s: condition %v, actions %v, missing data %v", name, res["Condition"], props["AlarmActions"], props["TreatMissingData"])
		}
		metrics := fmt.Sprint(props["Namespace"], "/", props["MetricName"])
		if props["Metrics"] != nil {
			metrics = fmt.Sprint(props["Metrics"])
		}
		for _, m := range []string{"AWS/Lambda/Errors", "AWS/Lambda/Throttles", "AWS/ApiGateway/5xx", "AWS/ApiGateway/Latency", "ReadThrottleEvents", "WriteThrottleEvents", "SystemErrors", "AWS/SQS/ApproximateNumberOfMessagesVisible"} {
			if strings.Contains(metrics, m) {
				alarms[m] = true
			}
		}
		if props["MetricName"] == "Latency" && props["ExtendedStatistic"] != "p99" {
			t.Errorf("latency alarm on %v, want p99", props["ExtendedStatistic"])
		}
	}
	for _, m := range []string{"AWS/Lambda/Errors", "AWS/Lambda/Throttles", "AWS/ApiGateway/5xx", "AWS/ApiGateway/Latency", "ReadThrottleEvents", "WriteThrottleEvents", "SystemErrors", "AWS/SQS/ApproximateNumberOfMessagesVisible"} {
		if !alarms[m] {
			t.Errorf("no alarm on %s", m)
		}
	}
	conditional := map[string]string{
		"AlarmTopic": "CreateAlarms", "AlarmEmailSubscription": "SubscribeAlarmEmail", "Budget": "HasBudget",
		"CustomDomain": "HasDomain", "CustomDomainMapping": "HasDomain",
		"PushQueue": "PushOn", "PushDeadLetters": "PushOn", "PushStreamFunction": "PushOn", "PushDeliverFunction": "PushOn",
		"PushDeadLettersAlarm": "PushAlarms",
	}
	for name, cond := range conditional {
		if r := tp.m("Resources", name); r == nil || r["Condition"] != cond {
			t.Errorf("%s: condition %v, want %s", name, r["Condition"], cond)
		}
	}
	budget := tp.m("Resources", "Budget", "Properties")
	if fmt.Sprint(tp.m("Resources", "Budget", "Properties", "Budget")["TimeUnit"]) != "MONTHLY" || !strings.Contains(fmt.Sprint(budget["NotificationsWithSubscribers"]), "map[Ref:AlarmEmail]") {
		t.Errorf("budget: %v", budget)
	}
	if fmt.Sprint(tp.m("Globals", "Function")["Tracing"]) != "map[Ref:Tracing]" {
		t.Errorf("Globals Tracing = %v", tp.m("Globals", "Function")["Tracing"])
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestSamconfig: samconfig.toml builds in the source tree (no copy of the
// repository per function) and every parameter it overrides, in every
// environment, is a template parameter with a value the template admits,
// and never a secret (PushKey).
func TestSamconfig(t *testing.T) {
	raw, err := os.ReadFile("../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(raw)
	for _, want := range []string{"[default.build.parameters]\n", "build_in_source = true", "[dev.sync.parameters]", "watch = true", `env_vars = "events/env.json"`} {
		if !strings.Contains(conf, want) {
			t.Errorf("samconfig.toml lacks %q", want)
		}
	}
	params := loadTemplate(t).m("Parameters")
	lines := regexp.MustCompile(`(?m)^parameter_overrides = "(.*)"$`).FindAllStringSubmatch(conf, -1)
	if len(lines) < 2 {
		t.Fatalf("%d parameter_overrides lines", len(lines))
	}
	pair := regexp.MustCompile(`([A-Za-z]+)=\\"([^"\\]*)\\"`)
	for _, l := range lines {
		pairs := pair.FindAllStringSubmatch(l[1], -1)
		if len(pairs) != strings.Count(l[1], "=") {
			t.Errorf("unparsed overrides in %s", l[1])
		}
		for _, p := range pairs {
			pm, ok := params[p[1]].(map[string]any)
			if !ok {
				t.Errorf("samconfig.toml overrides %s, which is not a template parameter", p[1])
				continue
			}
			if !parameterAccepts(t, pm, p[2]) {
				t.Errorf("samconfig.toml sets %s=%q, which the template refuses", p[1], p[2])
			}
			if pm["NoEcho"] == true {
				t.Errorf("samconfig.toml sets %s, a secret (NoEcho): it belongs on the command line", p[1])
			}
		}
	}
}

// testPushKey is a push key as `openssl rand -hex 32` makes one.
const testPushKey = "5f0c3e9a7b2d4e61a8c9f0b1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1"

// --- A small evaluator of the template's intrinsics, as CloudFormation
// resolves them for given parameter values (the others at their
// defaults). A resource's Ref or attribute stays a marker — "<Ref
// PushQueue>", "<PushQueue.Arn>" — and AWS::NoValue removes its key.

// noValue is what Ref AWS::NoValue evaluates to.
type noValue struct{}

func parameterValue(t *testing.T, tp tmpl, params map[string]string, name string) (string, bool) {
	if v, ok := params[name]; ok {
		return v, true
	}
	if p := tp.m("Parameters", name); p != nil {
		return fmt.Sprint(p["Default"]), true
	}
	return "", false
}

// evalCfn resolves v.
func evalCfn(t *testing.T, tp tmpl, params map[string]string, v any) any {
	t.Helper()
	switch v := v.(type) {
	case []any:
		out := []any{}
		for _, e := range v {
			if r := evalCfn(t, tp, params, e); r != (noValue{}) {
				out = append(out, r)
			}
		}
		return out
	case map[string]any:
		if len(v) == 1 {
			for k, arg := range v {
				if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
					return evalIntrinsic(t, tp, params, k, arg)
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			if r := evalCfn(t, tp, params, e); r != (noValue{}) {
				out[k] = r
			}
		}
		return out
	}
	return v
}

func evalIntrinsic(t *testing.T, tp tmpl, params map[string]string, fn string, arg any) any {
	t.Helper()
	switch fn {
	case "Ref":
		name := fmt.Sprint(arg)
		if name == "AWS::NoValue" {
			return noValue{}
		}
		if v, ok := parameterValue(t, tp, params, name); ok {
			return v
		}
		if strings.HasPrefix(name, "AWS::") || tp.m("Resources", name) != nil {
			return "<Ref " + name + ">"
		}
		t.Fatalf("Ref %s: no parameter or resource", name)
	case "Fn::GetAtt":
		l := strs(arg)
		return "<" + strings.Join(l, ".") + ">"
	case "Fn::If":
		l := arg.([]any)
		if condition(t, tp, params, fmt.Sprint(l[0])) {
			return evalCfn(t, tp, params, l[1])
		}
		return evalCfn(t, tp, params, l[2])
	case "Fn::Sub":
		s, ok := arg.(string)
		if !ok {
			t.Fatalf("Fn::Sub %v: only the string form is evaluated here", arg)
		}
		return regexp.MustCompile(`\$\{([A-Za-z0-9:.]+)\}`).ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			if strings.Contains(name, ".") {
				return "<" + name + ">"
			}
			return fmt.Sprint(evalIntrinsic(t, tp, params, "Ref", name))
		})
	case "Fn::Join":
		l := arg.([]any)
		var parts []string
		for _, p := range evalCfn(t, tp, params, l[1]).([]any) {
			parts = append(parts, fmt.Sprint(p))
		}
		return strings.Join(parts, fmt.Sprint(l[0]))
	case "Fn::Split":
		l := arg.([]any)
		var out []any
		for _, p := range strings.Split(fmt.Sprint(evalCfn(t, tp, params, l[1])), fmt.Sprint(l[0])) {
			out = append(out, p)
		}
		return out
	}
	t.Fatalf("%s is not evaluated here", fn)
	return nil
}

// condition evaluates one of the template's conditions.
func condition(t *testing.T, tp tmpl, params map[string]string, name string) bool {
	t.Helper()
	expr, ok := tp.m("Conditions")[name]
	if !ok {
		t.Fatalf("no condition %s", name)
	}
	return conditionExpr(t, tp, params, expr)
}

func conditionExpr(t *testing.T, tp tmpl, params map[string]string, expr any) bool {
	t.Helper()
	m, _ := expr.(map[string]any)
	for fn, arg := range m {
		switch fn {
		case "Condition":
			return condition(t, tp, params, fmt.Sprint(arg))
		case "Fn::Equals":
			l := arg.([]any)
			return fmt.Sprint(evalCfn(t, tp, params, l[0])) == fmt.Sprint(evalCfn(t, tp, params, l[1]))
		case "Fn::Not":
			return !conditionExpr(t, tp, params, arg.([]any)[0])
		case "Fn::And", "Fn::Or":
			and := fn == "Fn::And"
			for _, c := range arg.([]any) {
				if conditionExpr(t, tp, params, c) != and {
					return !and
				}
			}
			return and
		}
	}
	t.Fatalf("condition %v is not evaluated here", expr)
	return false
}

// parametersIn lists the parameters a value refers to (Ref, and ${…} in Fn::Sub).
func parametersIn(tp tmpl, v any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				if k == "Ref" && tp.m("Parameters", fmt.Sprint(e)) != nil {
					out = append(out, fmt.Sprint(e))
				}
				if s, ok := e.(string); ok && k == "Fn::Sub" {
					for _, m := range regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}`).FindAllStringSubmatch(s, -1) {
						if tp.m("Parameters", m[1]) != nil {
							out = append(out, m[1])
						}
					}
				}
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// environments gives the environment each kind of function gets for the
// given parameters: "Globals" (every function of the API), and each push
// function's (Globals merged with its own variables) when it is deployed.
func environments(t *testing.T, tp tmpl, params map[string]string) map[string]map[string]string {
	t.Helper()
	flat := func(v any) map[string]string {
		out := map[string]string{}
		m, _ := evalCfn(t, tp, params, v).(map[string]any)
		for k, e := range m {
			out[k] = fmt.Sprint(e)
		}
		return out
	}
	global := flat(tp.m("Globals", "Function", "Environment", "Variables"))
	out := map[string]map[string]string{"Globals": global}
	for _, fn := range pushFunctions {
		res := tp.m("Resources", fn)
		if res == nil || (res["Condition"] != nil && !condition(t, tp, params, fmt.Sprint(res["Condition"]))) {
			continue
		}
		vars := maps.Clone(global)
		maps.Copy(vars, flat(tp.m("Resources", fn, "Properties", "Environment", "Variables")))
		out[fn] = vars
	}
	return out
}

// filterMatches applies a Lambda event filter pattern to an event, both as
// decoded JSON: the part of the syntax the template uses — nested
// objects, lists of exact values, {"prefix": "…"}; anything else fails
// the test rather than being guessed at.
func filterMatches(t *testing.T, pattern, event any) bool {
	t.Helper()
	switch p := pattern.(type) {
	case map[string]any:
		ev, _ := event.(map[string]any)
		for k, sub := range p {
			if !filterMatches(t, sub, ev[k]) {
				return false
			}
		}
		return true
	case []any:
		for _, alt := range p {
			switch a := alt.(type) {
			case string, float64, bool:
				if event == a {
					return true
				}
			case map[string]any:
				pre, ok := a["prefix"].(string)
				if !ok || len(a) != 1 {
					t.Fatalf("filter pattern %v: only prefix is evaluated here", a)
				}
				if s, ok := event.(string); ok && strings.HasPrefix(s, pre) {
					return true
				}
			default:
				t.Fatalf("filter pattern %v: not evaluated here", alt)
			}
		}
		return false
	}
	t.Fatalf("filter pattern %v: not evaluated here", pattern)
	return false
}

// streamFilter is the stream function's filter patterns, decoded.
func streamFilter(t *testing.T, tp tmpl) []any {
	t.Helper()
	var patterns []any
	for name := range tp.m("Resources", "PushStreamFunction", "Properties", "Events") {
		filters, _ := tp.m("Resources", "PushStreamFunction", "Properties", "Events", name, "Properties", "FilterCriteria")["Filters"].([]any)
		for _, f := range filters {
			var p any
			if err := json.Unmarshal([]byte(fmt.Sprint(f.(map[string]any)["Pattern"])), &p); err != nil {
				t.Fatalf("filter pattern %v: %v", f, err)
			}
			patterns = append(patterns, p)
		}
	}
	if len(patterns) == 0 {
		t.Fatal("the stream function's event has no filter: every change of the table would invoke it")
	}
	return patterns
}

// passes reports whether a stream record (as Lambda's event JSON) gets
// through the filter: any pattern matching it.
func passes(t *testing.T, patterns []any, record any) bool {
	t.Helper()
	return slices.ContainsFunc(patterns, func(p any) bool { return filterMatches(t, p, record) })
}

// TestTemplatePush: the push profile's resources exist only with a
// PushKey (the table's stream too; empty or "none" is off), and are
// what infra/push needs: the
// queue with its dead letters and alarm, the stream function invoked only
// for new or changed items of a thread's partition, the delivery function
// with a timeout that fits its batch; the key and the queue's URL reach
// every function's environment.
func TestTemplatePush(t *testing.T) {
	tp := loadTemplate(t)
	// Alarms on, so that the push profile's alarm is among the resources.
	on, off := map[string]string{"PushKey": testPushKey, "Alarms": "true"}, map[string]string{"Alarms": "true"}
	// "none" is off too: `sam deploy --guided` prompts for a NoEcho
	// parameter without a default and takes no empty answer.
	none := map[string]string{"PushKey": "none", "Alarms": "true"}
	key := tp.m("Parameters", "PushKey")
	if key["NoEcho"] != true || key["Default"] != "" || !strings.Contains(fmt.Sprint(key["Description"]), "openssl rand -hex 32") {
		t.Errorf("PushKey: NoEcho %v, default %q, description %q", key["NoEcho"], key["Default"], key["Description"])
	}
	if !condition(t, tp, on, "PushOn") || condition(t, tp, off, "PushOn") || condition(t, tp, none, "PushOn") {
		t.Error("PushOn does not follow PushKey")
	}
	if !parameterAccepts(t, key, "none") {
		t.Error(`PushKey refuses "none": sam deploy --guided could not leave push off`)
	}

	// Every push resource is there with the key, none without.
	resources := tp.m("Resources")
	var push []string
	for name, r := range resources {
		if !strings.HasPrefix(name, "Push") {
			continue
		}
		push = append(push, name)
		cond, _ := r.(map[string]any)["Condition"].(string)
		if cond == "" || condition(t, tp, off, cond) || condition(t, tp, none, cond) || !condition(t, tp, on, cond) {
			t.Errorf("%s: condition %q, want one that holds with a PushKey only", name, cond)
		}
	}
	sort.Strings(push)
	if want := []string{"PushDeadLetters", "PushDeadLettersAlarm", "PushDeliverFunction", "PushQueue", "PushStreamFunction"}; !slices.Equal(push, want) {
		t.Errorf("push resources %v, want %v", push, want)
	}
	if alarm := tp.m("Resources", "PushDeadLettersAlarm"); condition(t, tp, map[string]string{"PushKey": testPushKey, "Alarms": "false"}, fmt.Sprint(alarm["Condition"])) {
		t.Error("the dead-letter alarm is there with Alarms=false")
	}
	stream := func(params map[string]string) any {
		return evalCfn(t, tp, params, tp.m("Resources", "Table", "Properties")).(map[string]any)["StreamSpecification"]
	}
	if fmt.Sprint(stream(on)) != "map[StreamViewType:NEW_AND_OLD_IMAGES]" || stream(off) != nil || stream(none) != nil {
		t.Errorf("the table's stream: %v with a key, %v without", stream(on), stream(off))
	}

	// The environment.
	envOn := environments(t, tp, on)
	for _, params := range []map[string]string{off, none} {
		envOff := environments(t, tp, params)
		if len(envOff) != 1 || envOff["Globals"]["PARLEY_PUSH_KEY"] != "" || envOff["Globals"]["PARLEY_PUSH_QUEUE"] != "" || strings.Contains(envOff["Globals"]["PARLEY_PROFILES"], "push") {
			t.Errorf("PushKey=%q: %v", params["PushKey"], envOff)
		}
	}
	if len(envOn) != 1+len(pushFunctions) {
		t.Errorf("with a key, environments of %v", slices.Collect(maps.Keys(envOn)))
	}
	for fn, vars := range envOn {
		if vars["PARLEY_PUSH_KEY"] != testPushKey || vars["PARLEY_PUSH_QUEUE"] != "<Ref PushQueue>" || !slices.Contains(strings.Split(vars["PARLEY_PROFILES"], ","), "push") {
			t.Errorf("%s with a key: key %q, queue %q, profiles %q", fn, vars["PARLEY_PUSH_KEY"], vars["PARLEY_PUSH_QUEUE"], vars["PARLEY_PROFILES"])
		}
	}

	// The queues.
	props := func(name string) map[string]any { return tp.m("Resources", name, "Properties") }
	num := func(v any) int { n, _ := strconv.Atoi(fmt.Sprint(v)); return n }
	queue, dlq, deliver, streamFn := props("PushQueue"), props("PushDeadLetters"), props("PushDeliverFunction"), props("PushStreamFunction")
	if tp.m("Resources", "PushQueue")["Type"] != "AWS::SQS::Queue" || tp.m("Resources", "PushDeadLetters")["Type"] != "AWS::SQS::Queue" {
		t.Error("PushQueue and PushDeadLetters are not SQS queues")
	}
	if queue["SqsManagedSseEnabled"] != true || dlq["SqsManagedSseEnabled"] != true {
		t.Error("a push queue without SSE")
	}
	if timeout := num(deliver["Timeout"]); timeout == 0 || num(queue["VisibilityTimeout"]) < 6*timeout {
		t.Errorf("visibility timeout %v, want at least 6 × the delivery function's timeout %v", queue["VisibilityTimeout"], deliver["Timeout"])
	}
	if fmt.Sprint(queue["RedrivePolicy"]) != "map[deadLetterTargetArn:map[Fn::GetAtt:[PushDeadLetters Arn]] maxReceiveCount:5]" {
		t.Errorf("redrive policy %v", queue["RedrivePolicy"])
	}
	if num(dlq["MessageRetentionPeriod"]) != 14*24*3600 {
		t.Errorf("dead letters kept %v s, want 14 days", dlq["MessageRetentionPeriod"])
	}

	// The stream function's event.
	onlyEvent := func(fn string, props map[string]any) (string, map[string]any) {
		evs, _ := props["Events"].(map[string]any)
		if len(evs) != 1 {
			t.Fatalf("%s: events %v, want one", fn, evs)
		}
		for _, e := range evs {
			em := e.(map[string]any)
			p, _ := em["Properties"].(map[string]any)
			return fmt.Sprint(em["Type"]), p
		}
		return "", nil
	}
	typ, ev := onlyEvent("PushStreamFunction", streamFn)
	if typ != "DynamoDB" || fmt.Sprint(ev["Stream"]) != "map[Fn::GetAtt:[Table StreamArn]]" || ev["StartingPosition"] != "LATEST" ||
		num(ev["BatchSize"]) != 100 || num(ev["MaximumBatchingWindowInSeconds"]) != 1 || fmt.Sprint(ev["FunctionResponseTypes"]) != "[ReportBatchItemFailures]" {
		t.Errorf("the stream event: %s %v", typ, ev)
	}
	// Retries bounded (-1, the default, is forever: one bad record would
	// hold its shard for the stream's 24 hours).
	if n := num(ev["MaximumRetryAttempts"]); ev["MaximumRetryAttempts"] == nil || n < 0 || n > 100 || num(ev["MaximumRecordAgeInSeconds"]) != 86400 {
		t.Errorf("retries %v, record age %v", ev["MaximumRetryAttempts"], ev["MaximumRecordAgeInSeconds"])
	}
	if num(streamFn["Timeout"]) != 60 {
		t.Errorf("the stream function's timeout %v", streamFn["Timeout"])
	}
	// The filter: new or changed items of a thread's partition (what
	// dynamo.DecodeChange reads), nothing else — iam_test.go runs it on a
	// real stream as well.
	filter := streamFilter(t, tp)
	for _, k := range [][2]string{{"th_1", "t"}, {"th_42", "m#0001"}, {"th_42", "e#0000000003"}, {"tok#ab12", "token"}, {"sub#sub_0123", "sub"},
		{"subcount#tk_1", "count"}, {"cl_7", "c"}, {"rate#tk_1#29", "n"}, {"idem#x", "idem"}, {"seq#thread", "seq"}, {"xth_1", "t"}} {
		for _, name := range []string{"INSERT", "MODIFY", "REMOVE"} {
			record := map[string]any{"eventName": name, "eventSource": "aws:dynamodb",
				"dynamodb": map[string]any{"Keys": map[string]any{"pk": map[string]any{"S": k[0]}, "sk": map[string]any{"S": k[1]}}}}
			if want := name != "REMOVE" && strings.HasPrefix(k[0], "th_"); passes(t, filter, record) != want {
				t.Errorf("the filter passes %s of %s/%s: %v, want %v", name, k[0], k[1], !want, want)
			}
		}
	}

	// The sample stream event of events/ (the thread's records of a
	// question) is what the filter lets through.
	raw, err := os.ReadFile("../events/push_stream.json")
	if err != nil {
		t.Fatal(err)
	}
	var sample struct{ Records []any }
	if err := json.Unmarshal(raw, &sample); err != nil || len(sample.Records) == 0 {
		t.Fatalf("events/push_stream.json: %v", err)
	}
	for i, r := range sample.Records {
		if !passes(t, filter, r) {
			t.Errorf("events/push_stream.json: record %d does not pass the filter", i)
		}
	}

	// The delivery function's event: a batch of attempts (10 s each, one
	// after the other) fits its timeout.
	typ, ev = onlyEvent("PushDeliverFunction", deliver)
	if typ != "SQS" || fmt.Sprint(ev["Queue"]) != "map[Fn::GetAtt:[PushQueue Arn]]" || num(ev["BatchSize"]) != 5 || fmt.Sprint(ev["FunctionResponseTypes"]) != "[ReportBatchItemFailures]" {
		t.Errorf("the queue event: %s %v", typ, ev)
	}
	if num(deliver["Timeout"]) != 60 || num(ev["BatchSize"])*10 >= num(deliver["Timeout"]) {
		t.Errorf("the delivery function's timeout %v for batches of %v", deliver["Timeout"], ev["BatchSize"])
	}

	// The dead letters' alarm, and the outputs.
	alarm := props("PushDeadLettersAlarm")
	if alarm["Namespace"] != "AWS/SQS" || alarm["MetricName"] != "ApproximateNumberOfMessagesVisible" || num(alarm["Threshold"]) != 0 || alarm["ComparisonOperator"] != "GreaterThanThreshold" ||
		fmt.Sprint(alarm["Dimensions"]) != "[map[Name:QueueName Value:map[Fn::GetAtt:[PushDeadLetters QueueName]]]]" {
		t.Errorf("the dead-letter alarm: %v", alarm)
	}
	for out, ref := range map[string]string{"PushQueueUrl": "PushQueue", "PushDeadLetterQueueUrl": "PushDeadLetters"} {
		if o := tp.m("Outputs", out); o == nil || o["Condition"] != "PushOn" || fmt.Sprint(o["Value"]) != "map[Ref:"+ref+"]" {
			t.Errorf("output %s: %v", out, o)
		}
	}
}

// TestTemplatePushSwitch: for every Profiles value with and without a
// PushKey, the functions built from the environment CloudFormation gives
// them do what the switch says: with a key, subscribe is served (401
// without a token, not 404), the manifest lists push, and both push
// functions start; without one, subscribe answers 404 and the manifest
// has no push. Profiles still decides the dialectic profile either way.
func TestTemplatePushSwitch(t *testing.T) {
	tp := loadTemplate(t)
	ctx := context.Background()
	event := func(name string) events.APIGatewayV2HTTPRequest {
		raw, err := os.ReadFile("../events/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		delete(ev.Headers, "authorization") // nothing here reaches DynamoDB
		return ev
	}
	for _, profiles := range tp.m("Parameters", "Profiles")["AllowedValues"].([]any) {
		for _, key := range []string{"", "none", testPushKey} {
			params := map[string]string{"Profiles": fmt.Sprint(profiles), "PushKey": key}
			pushOn := key == testPushKey
			t.Run(fmt.Sprintf("Profiles=%s,PushKey=%.8s", profiles, key), func(t *testing.T) {
				envs := environments(t, tp, params)
				start := func(fn string) config.Lambda {
					vars := maps.Clone(envs[fn])
					vars["PARLEY_DYNAMODB"] = "http://127.0.0.1:9" // never reached
					cfg, err := config.FromEnv(func(k string) string { return vars[k] })
					if err != nil {
						t.Fatalf("%s: %v", fn, err)
					}
					return cfg
				}
				cfg := start("Globals")
				sub, err := lambda.New(ctx, "subscribe", cfg, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				res, err := sub(ctx, event("subscribe"))
				if want := map[bool]int{true: 401, false: 404}[pushOn]; err != nil || res.StatusCode != want {
					t.Errorf("subscribe without a token: %d %s, want %d", res.StatusCode, res.Body, want)
				}
				manifest, err := lambda.New(ctx, "get_manifest", cfg, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				res, err = manifest(ctx, event("get_manifest"))
				var m struct{ Profiles []struct{ Name string } }
				if err != nil || json.Unmarshal([]byte(res.Body), &m) != nil {
					t.Fatalf("the manifest: %v %s", err, res.Body)
				}
				var names []string
				for _, p := range m.Profiles {
					names = append(names, p.Name)
				}
				var want []string
				if profiles == core.ProfileDialectic {
					want = append(want, core.ProfileDialectic)
				}
				if pushOn {
					want = append(want, core.ProfilePush)
				}
				if !slices.Equal(names, want) {
					t.Errorf("the manifest's profiles %v, want %v", names, want)
				}
				for _, fn := range pushFunctions {
					if _, deployed := envs[fn]; deployed != pushOn {
						t.Fatalf("%s deployed: %v", fn, deployed)
					}
					if !pushOn {
						continue
					}
					name := map[string]string{functionName(lambda.PushStream): lambda.PushStream, functionName(lambda.PushDeliver): lambda.PushDeliver}[fn]
					if _, err := lambda.NewPush(ctx, name, start(fn), io.Discard); err != nil {
						t.Errorf("%s does not start: %v", fn, err)
					}
				}
			})
		}
	}
}
