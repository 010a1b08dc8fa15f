// Package httpapi serves Parley's operations over HTTP: a loop over the
// operation table (core.Operation), each at its route. A request becomes
// one JSON object of arguments — path, query, header and body fields
// together — and goes through core.Service.Call like an MCP tool call, so
// both transports decode, check and refuse alike. One structured log line
// is written per request.
package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/edge"
)

// API serves the operations of one service.
type API struct {
	svc *core.Service
	log *slog.Logger
}

// New builds the API on a service. The logger receives one line per request.
func New(svc *core.Service, log *slog.Logger) (*API, error) {
	if svc == nil || log == nil {
		return nil, errors.New("httpapi: a service and a logger are required")
	}
	return &API{svc: svc, log: log}, nil
}

// Handler serves every operation of the instance, the manifest's
// well-known alias, 405 with Allow for a wrong method on a known path, and
// a JSON 404 for anything else. Others (MCP, the console) may add routes.
func (a *API) Handler() *http.ServeMux {
	mux := http.NewServeMux()
	for _, op := range a.svc.Operations() {
		mux.Handle(op.Method+" "+op.Path, a.serve(op))
	}
	if op, ok := a.svc.Operation("get_manifest"); ok {
		mux.Handle("GET /.well-known/parley.json", a.serve(op))
	}
	mux.Handle("/", a.Fallback()) // 405 for a known path, else 404
	return mux
}

// Operation serves one named operation (a Lambda function behind its own
// route), with the same 405 and 404 answers as Handler.
func (a *API) Operation(name string) (http.Handler, error) {
	op, ok := a.svc.Operation(name)
	if !ok {
		for _, known := range core.AllOperations() {
			if known.Name == name { // its profile is off: the route answers 404
				return a.Fallback(), nil
			}
		}
		return nil, errors.New("httpapi: unknown operation " + name)
	}
	mux := http.NewServeMux()
	mux.Handle(op.Method+" "+op.Path, a.serve(op))
	if name == "get_manifest" {
		mux.Handle("GET /.well-known/parley.json", a.serve(op))
	}
	mux.Handle("/", a.Fallback())
	return mux, nil
}

// paths maps every route's path to the methods it answers.
func (a *API) paths() map[string][]string {
	out := map[string][]string{}
	for _, op := range a.svc.Operations() {
		out[op.Path] = append(out[op.Path], op.Method)
	}
	for _, ms := range out {
		slices.Sort(ms)
	}
	return out
}

// Fallback answers a request no route took: 405 with Allow when the path
// is a known route's (the operations of the whole table, so that a single
// function behind API Gateway's $default route answers like the server),
// else 404; both as the JSON error object.
func (a *API) Fallback() http.Handler {
	mux := http.NewServeMux()
	for path, allowed := range a.paths() {
		mux.Handle(path, a.methodNotAllowed(allowed))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rec := a.begin(w, r)
		rec.Op = "not_found"
		defer rec.Log(r.Context(), a.log)
		rec.WriteRefusal(r.Context(), a.log, w, core.Refuse(core.ReasonNotFound, "no such route; GET /v1/manifest lists the operations"))
	})
	return mux
}

func (a *API) methodNotAllowed(allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := a.begin(w, r)
		rec.Op = "method_not_allowed"
		defer rec.Log(r.Context(), a.log)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		rec.WriteRefusal(r.Context(), a.log, w, core.Refuse(core.ReasonMethodNotAllowed, "%s is not allowed here; allowed: %s", r.Method, strings.Join(allowed, ", ")).With("allow", allowed))
	})
}

func (a *API) begin(w http.ResponseWriter, r *http.Request) *edge.Record {
	rec := edge.Begin("http", edge.RequestID(r))
	w.Header().Set(edge.RequestIDHeader, rec.RequestID)
	return rec
}

// replayed is a result that repeats an earlier one (an idempotent retry):
// 200, not 201.
type replayed interface{ WasReplayed() bool }

func (a *API) serve(op *core.Operation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := a.begin(w, r)
		rec.Op = op.Name
		ctx := r.Context()
		defer rec.Log(ctx, a.log)
		out, err := a.call(r, op, rec)
		if err != nil {
			rec.WriteRefusal(ctx, a.log, w, err)
			return
		}
		status := http.StatusOK
		if rp, ok := out.(replayed); op.Created && !(ok && rp.WasReplayed()) {
			status = http.StatusCreated
			if op.Location != nil {
				w.Header().Set("Location", op.Location(out))
			}
		}
		rec.Status = status
		edge.WriteJSON(w, status, out)
	})
}

// call authenticates, checks the right, reads the input and runs the
// operation: docs/protocol.md §5.8's order, whatever the body holds.
func (a *API) call(r *http.Request, op *core.Operation, rec *edge.Record) (any, error) {
	ctx := r.Context()
	var c core.Caller
	// A token that is sent is always checked, even where none is needed.
	if bearer := edge.Bearer(r); op.Right != "" || bearer != "" {
		var err error
		if c, err = a.svc.Authenticate(ctx, bearer); err != nil {
			return nil, err
		}
		rec.Identity = c.Identity
	}
	if err := a.svc.Permit(op, c); err != nil {
		return nil, err
	}
	args, err := a.args(r, op)
	if err != nil {
		return nil, err
	}
	return a.svc.Call(ctx, op, c, args)
}

// args gathers an operation's input from the request into one JSON object:
// the body's members, then the path, query and header parameters. Unknown
// query parameters, a parameter given twice, and a body member that is
// also given elsewhere are refused.
func (a *API) args(r *http.Request, op *core.Operation) ([]byte, error) {
	members := map[string]jsontext.Value{}
	limit := a.svc.Limits().RequestBody
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
		if err != nil {
			return nil, core.Unavailable(time.Second, err)
		}
	}
	if len(body) > limit {
		return nil, core.Refuse(core.ReasonTooLarge, "the request body exceeds %d bytes", limit).With("limit", limit)
	}
	if len(body) > 0 {
		if err := core.DecodeStrict(body, &members); err != nil {
			ref := core.AsRefusal(err)
			if ref.Detail["field"] == "body" {
				return nil, core.Invalid("body", "the body must be one JSON object: %s", ref.Message)
			}
			return nil, ref
		}
		// An operation that takes no body takes an empty object too.
		if len(members) > 0 && !slices.ContainsFunc(op.Params, func(p core.Param) bool { return p.In == "body" }) {
			return nil, core.Invalid("body", "%s %s takes no body", op.Method, op.Path)
		}
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, core.Invalid("query", "the query string is malformed")
	}
	for name := range query {
		if !slices.ContainsFunc(op.Params, func(p core.Param) bool { return p.In == "query" && p.Name == name }) {
			return nil, core.Invalid(name, "unknown query parameter %q", name)
		}
	}
	for _, p := range op.Params {
		var raw string
		given := false
		switch p.In {
		case "path":
			raw, given = r.PathValue(p.Name), true
		case "query":
			vs := query[p.Name]
			if len(vs) > 1 {
				return nil, core.Invalid(p.Name, "%s is given twice", p.Name)
			}
			if len(vs) == 1 {
				raw, given = vs[0], true
			}
		case "header":
			vs := r.Header.Values(p.Header)
			if len(vs) > 1 {
				return nil, core.Invalid(p.Header, "the %s header is given twice", p.Header)
			}
			if len(vs) == 1 {
				raw, given = vs[0], true
			}
		}
		if !given {
			continue
		}
		if _, dup := members[p.Name]; dup {
			return nil, core.Invalid(p.Name, "%s is given in the %s and in the body", p.Name, p.In)
		}
		members[p.Name] = literal(raw, p.Type)
	}
	return json.Marshal(members)
}

// literal turns a path, query or header value into JSON: an integer
// parameter that reads as one becomes a number (anything else stays a
// string and the decoder refuses it, naming the parameter).
func literal(raw, typ string) jsontext.Value {
	if typ == "integer" {
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return jsontext.Value(strconv.FormatInt(n, 10))
		}
	}
	v, _ := json.Marshal(raw)
	return v
}
