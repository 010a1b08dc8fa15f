// Package functions holds one tiny main per Lambda function; this test
// package checks that template.yaml, the Makefile and those mains agree with
// each other and with decisions §9, and runs every function under the Lambda
// Runtime Interface Emulator.
package functions

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/dynamo"
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

// routes is the operation table (every profile), the manifest's alias, and MCP.
func routes() map[string]string {
	r := map[string]string{}
	for _, op := range core.AllOperations() {
		r[op.Method+" "+op.Path] = op.Name
	}
	r["GET /.well-known/parley.json"] = "get_manifest"
	r["POST /mcp"] = "mcp"
	return r
}

var writeActions = regexp.MustCompile(`dynamodb:(PutItem|UpdateItem|DeleteItem|BatchWriteItem|\*)`)

func TestTemplate(t *testing.T) {
	tp := loadTemplate(t)
	if tp["Transform"] != "AWS::Serverless-2016-10-31" {
		t.Fatalf("Transform = %v", tp["Transform"])
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
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
			if fmt.Sprint(log["LogGroup"]) != "map[Ref:LogGroup]" {
				t.Fatalf("LoggingConfig = %v", log)
			}
			policies := fmt.Sprint(props["Policies"])
			events, _ := props["Events"].(map[string]any)
			if len(events) == 0 {
				t.Fatal("no events")
			}
			read := true
			for _, e := range events {
				ev := e.(map[string]any)
				p := ev["Properties"].(map[string]any)
				if ev["Type"] != "HttpApi" || fmt.Sprint(p["ApiId"]) != "map[Ref:HttpApi]" {
					t.Fatalf("event %v", ev)
				}
				route := fmt.Sprint(p["Method"]) + " " + fmt.Sprint(p["Path"])
				want, ok := routes()[route]
				if !ok || want != op {
					t.Fatalf("route %s is not operation %s's", route, op)
				}
				served[route] = name
				read = read && p["Method"] == "GET"
			}
			if read {
				if !strings.Contains(policies, "DynamoDBReadPolicy") || writeActions.MatchString(policies) || strings.Contains(policies, "Crud") || strings.Contains(policies, "Write") {
					t.Fatalf("read operation %s holds write rights: %s", op, policies)
				}
			} else if strings.Contains(policies, "Scan") || strings.Contains(policies, "DeleteItem") {
				t.Fatalf("write policy broader than needed: %s", policies)
			}
		})
	}
	for route := range routes() {
		if served[route] == "" {
			t.Errorf("route %s has no function", route)
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
// one infra/dynamo creates locally.
func TestTemplateTableMatchesTheStore(t *testing.T) {
	tp := loadTemplate(t)
	table := tp.m("Resources", "Table")
	props := table["Properties"].(map[string]any)
	if props["BillingMode"] != "PAY_PER_REQUEST" || table["DeletionPolicy"] != "Retain" {
		t.Fatalf("billing %v, deletion policy %v", props["BillingMode"], table["DeletionPolicy"])
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
	for _, p := range []string{"Realm", "Stage", "LogLevel", "LogRetentionDays"} {
		if tp.m("Parameters", p) == nil {
			t.Errorf("parameter %s missing", p)
		}
	}
	if tp.m("Resources", "LogGroup", "Properties")["RetentionInDays"] == nil {
		t.Error("log retention not set")
	}
	for _, o := range []string{"ApiUrl", "TableName", "McpEndpoint"} {
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
