package httpapi

import (
	"net/http"
	"strconv"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/refusal"
)

func (a *API) manifest(*http.Request, core.Caller, []byte) (int, any, error) {
	return http.StatusOK, refusal.Manifest(a.svc.Manifest()), nil
}

func (a *API) whoami(r *http.Request, c core.Caller, _ []byte) (int, any, error) {
	w, err := a.svc.WhoAmI(r.Context(), c)
	return http.StatusOK, w, err
}

func (a *API) post(r *http.Request, c core.Caller, body []byte) (int, any, error) {
	res, err := a.svc.Post(r.Context(), c, body, r.Header.Get("Idempotency-Key"))
	if res.Replayed {
		return http.StatusOK, res, err
	}
	return http.StatusCreated, res, err
}

func threadRef(r *http.Request) (int64, error) {
	return core.ParseRef(r.PathValue("thread"), "th_", "thread")
}

func (a *API) getThread(r *http.Request, c core.Caller, _ []byte) (int, any, error) {
	id, err := threadRef(r)
	if err != nil {
		return 0, nil, err
	}
	limit, err := limitParam(r)
	if err != nil {
		return 0, nil, err
	}
	v, err := a.svc.GetThread(r.Context(), c, core.GetThreadQuery{Thread: id, Cursor: r.URL.Query().Get("cursor"), Limit: limit})
	return http.StatusOK, v, err
}

func limitParam(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, &core.Refusal{Reason: core.ReasonInvalidBody, Message: "limit must be a positive integer", Detail: map[string]any{"field": "limit"}}
	}
	return n, nil
}

func (a *API) listThreads(r *http.Request, c core.Caller, _ []byte) (int, any, error) {
	limit, err := limitParam(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	p, err := a.svc.ListThreads(r.Context(), c, core.ListThreadsQuery{State: q.Get("state"), Cursor: q.Get("cursor"), Limit: limit})
	return http.StatusOK, p, err
}

func (a *API) mark(r *http.Request, c core.Caller, body []byte) (int, any, error) {
	id, err := threadRef(r)
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		State *string `json:"state"`
	}
	if err := core.DecodeStrict(body, &in); err != nil {
		return 0, nil, err
	}
	if in.State == nil {
		return 0, nil, &core.Refusal{Reason: core.ReasonInvalidBody, Message: "state is required", Detail: map[string]any{"field": "state"}}
	}
	st, err := a.svc.Mark(r.Context(), c, id, *in.State)
	return http.StatusOK, st, err
}

// emptyBody accepts no body, or an empty JSON object.
func emptyBody(body []byte) error {
	if len(body) == 0 {
		return nil
	}
	var in struct{}
	return core.DecodeStrict(body, &in)
}

func (a *API) confirm(r *http.Request, c core.Caller, body []byte) (int, any, error) {
	return threadOp(r, body, func(id int64) (core.ThreadState, error) { return a.svc.Confirm(r.Context(), c, id) })
}

func (a *API) reopen(r *http.Request, c core.Caller, body []byte) (int, any, error) {
	return threadOp(r, body, func(id int64) (core.ThreadState, error) { return a.svc.Reopen(r.Context(), c, id) })
}

// threadOp serves an operation on the path's thread that takes no body.
func threadOp(r *http.Request, body []byte, op func(int64) (core.ThreadState, error)) (int, any, error) {
	id, err := threadRef(r)
	if err == nil {
		err = emptyBody(body)
	}
	if err != nil {
		return 0, nil, err
	}
	st, err := op(id)
	return http.StatusOK, st, err
}

// threadParam reads the optional thread query parameter (0 when absent).
func threadParam(r *http.Request) (int64, error) {
	s := r.URL.Query().Get("thread")
	if s == "" {
		return 0, nil
	}
	return core.ParseRef(s, "th_", "thread")
}

func (a *API) events(r *http.Request, c core.Caller, _ []byte) (int, any, error) {
	limit, err := limitParam(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	thread, err := threadParam(r)
	if err != nil {
		return 0, nil, err
	}
	p, err := a.svc.Events(r.Context(), c, core.EventsQuery{Thread: thread, Since: q.Get("since"), Limit: limit})
	return http.StatusOK, p, err
}

func (a *API) inbox(r *http.Request, c core.Caller, _ []byte) (int, any, error) {
	limit, err := limitParam(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	in := core.InboxQuery{Since: q.Get("since"), Limit: limit}
	if q.Has("extension") {
		ext := q.Get("extension")
		in.Extension = &ext
	}
	p, err := a.svc.Inbox(r.Context(), c, in)
	return http.StatusOK, p, err
}

func (a *API) getClaim(r *http.Request, c core.Caller, _ []byte) (int, any, error) {
	id, err := core.ParseRef(r.PathValue("claim"), "cl_", "claim")
	if err != nil {
		return 0, nil, err
	}
	v, err := a.svc.GetClaim(r.Context(), c, id)
	return http.StatusOK, v, err
}

func (a *API) listClaims(r *http.Request, c core.Caller, _ []byte) (int, any, error) {
	limit, err := limitParam(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	thread, err := threadParam(r)
	if err != nil {
		return 0, nil, err
	}
	p, err := a.svc.ListClaims(r.Context(), c, core.ListClaimsQuery{Thread: thread, State: q.Get("state"), Cursor: q.Get("cursor"), Limit: limit})
	return http.StatusOK, p, err
}
