package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/testenv"
)

// world is one server over one embedded DynamoDB, with the usual cast.
type world struct {
	t    testing.TB
	env  *testenv.Env
	srv  *httptest.Server
	cast testenv.Cast
	seq  int // makes bodies unique where a test repeats an act
}

// newWorld runs on the strict backend (moto_server); newWorldOn picks one.
func newWorld(t *testing.T, o core.Options) *world {
	t.Helper()
	return newWorldOn(t, testenv.Strict, o)
}

func newWorldOn(t *testing.T, b testenv.Backend, o core.Options) *world {
	t.Helper()
	env := testenv.On(t, b, o)
	api, err := httpapi.New(env.Service, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &world{t: t, env: env, srv: srv, cast: env.Cast(t)}
}

// obj is a decoded JSON object with small accessors for dotted paths.
type obj map[string]any

func (o obj) get(path string) any {
	var cur any = map[string]any(o)
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func (o obj) str(path string) string {
	s, _ := o.get(path).(string)
	return s
}

func (o obj) num(path string) int {
	f, _ := o.get(path).(float64)
	return int(f)
}

func (o obj) list(path string) []any {
	l, _ := o.get(path).([]any)
	return l
}

type resp struct {
	status int
	body   obj
	raw    string
	header http.Header
}

func (r resp) reason() string { return r.body.str("error.reason") }

// do sends a request; body is a string (sent as is) or a value (JSON).
func (w *world) do(method, path, token string, body any, headers ...string) resp {
	w.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			w.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, w.srv.URL+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{status: res.StatusCode, raw: string(raw), header: res.Header}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		w.t.Fatalf("%s %s: response is not a JSON object: %q", method, path, raw)
	}
	return out
}

// post sends an envelope and insists on the expected status.
func (w *world) post(token string, env map[string]any, wantStatus int) resp {
	w.t.Helper()
	r := w.do("POST", "/v1/messages", token, env)
	if r.status != wantStatus {
		w.t.Fatalf("post %v: status %d, want %d: %s", env, r.status, wantStatus, r.raw)
	}
	return r
}

// ask opens a thread as token and returns its id and root message id.
func (w *world) ask(token, body string) (string, string) {
	w.t.Helper()
	r := w.post(token, map[string]any{"kind": "ask", "body": body}, 201)
	return r.body.str("thread.id"), r.body.str("message.id")
}

func (w *world) thread(id string) obj {
	w.t.Helper()
	r := w.do("GET", "/v1/threads/"+id, w.cast.Human, nil)
	if r.status != 200 {
		w.t.Fatalf("get %s: %d %s", id, r.status, r.raw)
	}
	return r.body
}

func (w *world) mark(token, thread, state string) resp {
	w.t.Helper()
	return w.do("POST", "/v1/threads/"+thread+"/mark", token, map[string]any{"state": state})
}

// awaitingOf renders a thread state's awaiting compactly: "-", "any-but:<id>/<ext>",
// "human", or "<identity>/<extension>".
func awaitingOf(o obj, prefix string) string {
	a, ok := o.get(prefix + "awaiting").(map[string]any)
	if !ok {
		return "-"
	}
	m := obj(a)
	switch m.str("scope") {
	case "any":
		return fmt.Sprintf("any-but:%s/%s", m.str("except.identity"), m.str("except.extension"))
	case "human":
		return "human"
	}
	return m.str("identity") + "/" + m.str("extension")
}
