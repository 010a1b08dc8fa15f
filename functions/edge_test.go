package functions

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/ainotes/parley/infra/lambda"
)

// TestEdgeUnderEmulator runs the functions at the API's edges under the
// Lambda Runtime Interface Emulator with the events/ payloads of API
// Gateway's routes: the console and the $default route (Parley's own JSON
// 404 and 405, never API Gateway's {"message":"Not Found"}), GET and DELETE
// of /mcp (405 with Allow: POST, what MCP clients expect), and an
// Idempotency-Key with a comma in it, which reaches the handler whole: the
// same key replays, a key that differs after the comma posts anew.
func TestEdgeUnderEmulator(t *testing.T) {
	rie := emulatorPath(t)
	dbURL := embeddedTable(t, "parley-edge")
	bin := buildHost(t)
	env := []string{"PARLEY_TABLE=parley-edge", "PARLEY_DYNAMODB=" + dbURL, "PARLEY_TOKEN_CACHE_TTL=30s", "AWS_REGION=eu-west-1", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256"}
	fns := startAll(t, rie, bin, []string{lambda.Console, lambda.MCP, "post"}, env)

	refusal := func(reason string) func(*testing.T, events.APIGatewayV2HTTPResponse) {
		return func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			t.Helper()
			var b struct {
				Error struct{ Reason string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(res.Body), &b); err != nil || b.Error.Reason != reason || !strings.HasPrefix(res.Headers["Content-Type"], "application/json") {
				t.Fatalf("want the JSON refusal %s, got %s %v", reason, res.Body, res.Headers)
			}
		}
	}
	allowPost := func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
		t.Helper()
		if res.Headers["Allow"] != "POST" {
			t.Fatalf("Allow %q", res.Headers["Allow"])
		}
	}
	var firstMessage string
	message := func(res events.APIGatewayV2HTTPResponse) string {
		var b struct {
			Message struct{ ID string } `json:"message"`
		}
		_ = json.Unmarshal([]byte(res.Body), &b)
		return b.Message.ID
	}
	steps := []struct {
		event, function string
		status          int
		checks          []func(*testing.T, events.APIGatewayV2HTTPResponse)
		requestID       bool // the response carries API Gateway's request id
	}{
		{"console_index", lambda.Console, 200, []func(*testing.T, events.APIGatewayV2HTTPResponse){func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if !strings.HasPrefix(res.Headers["Content-Type"], "text/html") || !strings.Contains(res.Body, "/ui/") || res.Headers["Content-Security-Policy"] == "" {
				t.Fatalf("the console page: %v %.200s", res.Headers, res.Body)
			}
		}}, false},
		{"console_asset", lambda.Console, 200, []func(*testing.T, events.APIGatewayV2HTTPResponse){func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if !strings.HasPrefix(res.Headers["Content-Type"], "text/javascript") || res.Headers["Cache-Control"] != "no-cache" {
				t.Fatalf("an asset of another version: %v", res.Headers)
			}
		}}, false},
		{"default_not_found", lambda.Console, 404, []func(*testing.T, events.APIGatewayV2HTTPResponse){refusal("not_found")}, true},
		{"default_method_not_allowed", lambda.Console, 405, []func(*testing.T, events.APIGatewayV2HTTPResponse){refusal("method_not_allowed"), allowPost}, true},
		{"mcp_get", lambda.MCP, 405, []func(*testing.T, events.APIGatewayV2HTTPResponse){allowPost}, false},
		{"mcp_delete", lambda.MCP, 405, []func(*testing.T, events.APIGatewayV2HTTPResponse){allowPost}, false},
		{"post_idempotency", "post", 201, []func(*testing.T, events.APIGatewayV2HTTPResponse){func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if firstMessage = message(res); firstMessage == "" {
				t.Fatalf("%s", res.Body)
			}
		}}, true},
		{"post_idempotency", "post", 200, []func(*testing.T, events.APIGatewayV2HTTPResponse){func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if m := message(res); m != firstMessage {
				t.Fatalf("the retry with the same key answered %s, want the replay of %s", m, firstMessage)
			}
		}}, true},
		{"post_idempotency_other", "post", 201, []func(*testing.T, events.APIGatewayV2HTTPResponse){func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if m := message(res); m == "" || m == firstMessage {
				t.Fatalf("a key differing after the comma answered %s (first %s): the key was cut at the comma", m, firstMessage)
			}
		}}, true},
	}
	for _, step := range steps {
		t.Run(step.event, func(t *testing.T) {
			event, err := os.ReadFile("../events/" + step.event + ".json")
			if err != nil {
				t.Fatal(err)
			}
			res := fns[step.function].invoke(t, event)
			if res.StatusCode != step.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, step.status, res.Body)
			}
			for _, check := range step.checks {
				check(t, res)
			}
			if id := res.Headers["X-Request-Id"]; step.requestID && id != "evt-"+step.event {
				t.Fatalf("request id %q: API Gateway's id is not carried", id)
			}
		})
	}
}
