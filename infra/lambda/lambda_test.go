package lambda

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/console"
)

// event is an API Gateway HTTP API (payload 2.0) event.
func event(method, path string, headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Headers: headers, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1", DomainName: "abc123.execute-api.eu-west-1.amazonaws.com", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.7"},
		},
	}
}

// headersSeen echoes the values of every header the handler received.
var headersSeen = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_ = json.NewEncoder(w).Encode(r.Header)
})

// The headers the protocol reads, with commas and spaces in them: each
// reaches the handler as the one value API Gateway delivered.
var commaHeaders = map[string]string{
	"idempotency-key":      "retry-7, attempt 2",
	"authorization":        "Bearer pt_a,b",
	"x-request-id":         "client-1, hop 2",
	"content-type":         "application/json; charset=utf-8",
	"accept":               "application/json, text/event-stream",
	"mcp-protocol-version": "2025-06-18",
}

func TestAdaptKeepsHeadersWhole(t *testing.T) {
	res, err := Adapt(headersSeen)(context.Background(), event("POST", "/v1/messages", commaHeaders, "{}"))
	if err != nil {
		t.Fatal(err)
	}
	var got http.Header
	if err := json.Unmarshal([]byte(res.Body), &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range commaHeaders {
		if vs := got.Values(k); len(vs) != 1 || vs[0] != v {
			t.Errorf("%s reached the handler as %q, want [%q]", k, vs, v)
		}
	}
}

// TestProxyLibrarySplitsHeaders pins why Adapt exists: the proxy library
// alone splits a comma-separated value into several. If this starts failing
// the library has changed and WholeHeaders may no longer be needed.
func TestProxyLibrarySplitsHeaders(t *testing.T) {
	res, err := httpadapter.NewV2(headersSeen).ProxyWithContext(context.Background(), event("POST", "/v1/messages", commaHeaders, "{}"))
	if err != nil {
		t.Fatal(err)
	}
	var got http.Header
	_ = json.Unmarshal([]byte(res.Body), &got)
	if vs := got.Values("Idempotency-Key"); len(vs) != 2 || vs[0] != "retry-7" {
		t.Fatalf("the proxy library delivered Idempotency-Key as %q; expected it split at the comma", vs)
	}
}

func TestAdaptCarriesCookiesAndTheRequestID(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Got-Cookies", strings.Join(r.Header.Values("Cookie"), "|"))
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.WriteHeader(http.StatusTeapot)
	})
	ev := event("GET", "/x", map[string]string{"host": "abc123.execute-api.eu-west-1.amazonaws.com"}, "")
	ev.Cookies = []string{"s=1", "t=2"}
	res, err := Adapt(h)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusTeapot || res.Headers["X-Got-Cookies"] != "s=1|t=2" || strings.Join(res.Cookies, "|") != "a=1|b=2" {
		t.Fatalf("status %d, headers %v, cookies %v", res.StatusCode, res.Headers, res.Cookies)
	}
}

// deniedDynamoDB answers every request the way DynamoDB answers a role
// without a policy for it, and counts the requests.
func deniedDynamoDB(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazon.coral.service#AccessDeniedException","message":"not authorized to perform dynamodb:* (test)"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestNoTableAccessNeeded runs the functions the template gives no table
// policy at all — the console ($default) and get_manifest — against a
// DynamoDB that refuses everything: they answer every request they serve
// without a single DynamoDB request.
func TestNoTableAccessNeeded(t *testing.T) {
	srv, calls := deniedDynamoDB(t)
	cfg := config.Lambda{Table: "t", Realm: "ainotes", DynamoDB: srv.URL, TokenCacheTTL: 30 * time.Second, RateLimit: 120}
	build := func(op string) Handler {
		h, err := New(context.Background(), op, cfg, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	consoleFn, manifestFn := build(Console), build("get_manifest")
	cases := []struct {
		name   string
		fn     Handler
		method string
		path   string
		status int
		check  func(t *testing.T, res events.APIGatewayV2HTTPResponse)
	}{
		{"console page", consoleFn, "GET", "/", 200, func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if !strings.HasPrefix(res.Headers["Content-Type"], "text/html") || res.Headers["Content-Security-Policy"] == "" {
				t.Fatalf("headers %v", res.Headers)
			}
		}},
		{"console asset", consoleFn, "GET", "/ui/" + console.Version() + "/app.js", 200, func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if !strings.HasPrefix(res.Headers["Content-Type"], "text/javascript") {
				t.Fatalf("headers %v", res.Headers)
			}
		}},
		{"unknown path", consoleFn, "GET", "/nowhere", 404, refusal("not_found")},
		{"wrong method on a route", consoleFn, "PUT", "/v1/messages", 405, func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			refusal("method_not_allowed")(t, res)
			if res.Headers["Allow"] != "POST" {
				t.Fatalf("Allow %q", res.Headers["Allow"])
			}
		}},
		{"wrong method on the manifest", consoleFn, "POST", "/v1/manifest", 405, refusal("method_not_allowed")},
		{"manifest", manifestFn, "GET", "/v1/manifest", 200, nil},
		{"well-known manifest", manifestFn, "GET", "/.well-known/parley.json", 200, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.fn(context.Background(), event(tc.method, tc.path, map[string]string{"host": "abc123.execute-api.eu-west-1.amazonaws.com"}, ""))
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, res.Body)
			}
			if res.Headers["X-Request-Id"] == "" && res.StatusCode >= 400 {
				t.Fatalf("no X-Request-Id: %v", res.Headers)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB requests; these functions have no table access", n)
	}
}

func refusal(reason string) func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
	return func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
		t.Helper()
		var body struct {
			Error struct{ Reason string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(res.Body), &body); err != nil || body.Error.Reason != reason {
			t.Fatalf("body %s, want reason %s", res.Body, reason)
		}
	}
}

func TestUnknownOperation(t *testing.T) {
	if _, err := New(context.Background(), "no_such_op", config.Lambda{Table: "t", Realm: "ainotes", DynamoDB: "http://127.0.0.1:1"}, io.Discard); err == nil {
		t.Fatal("an unknown operation built a handler")
	}
}
