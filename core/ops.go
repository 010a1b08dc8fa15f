package core

import (
	"context"
	"reflect"
	"strings"
	"sync"
)

// Operation is one operation of the protocol, defined once: both
// transports serve it from this entry (HTTP at Method and Path, MCP as the
// tool of the same name), the manifest describes it, and the Lambda
// function list and the template are checked against it. Adding an
// operation is one entry here plus its method on Service.
type Operation struct {
	Name  string
	Title string
	Does  string // for people and models: what it does and what it returns
	// Right is what the caller's token must hold; "" is public (no token).
	Right   Right
	Profile string // "" for the core, else the profile that adds it
	// ReadOnly operations change nothing; Idempotent ones may be repeated.
	ReadOnly, Idempotent bool
	Method, Path         string // the HTTP route; path parameters as {name}
	// Created: success is "201 Created" (HTTP), with Location when set.
	Created  bool
	Location func(out any) string
	Params   []Param
	// In and Out are the types the published schemas describe: the
	// output's, and the input as clients send it (for post the wire
	// envelope, which the decoder reads into its own input type).
	In, Out reflect.Type

	call func(ctx context.Context, s *Service, c Caller, args []byte) (any, error)
}

// Param is one field of an operation's input: where HTTP takes it from
// (MCP takes every field from the tool's arguments), its JSON type, and
// whether it must be given.
type Param struct {
	Name     string   `json:"name"`
	In       string   `json:"in"` // path, query, body or header
	Header   string   `json:"header,omitempty"`
	Type     string   `json:"type"`
	Required bool     `json:"required"`
	Enum     []string `json:"enum,omitempty"`
	Does     string   `json:"description,omitempty"`
	profile  string
}

// RightHuman is the right of the token operations: only a human token has it.
const RightHuman Right = "human"

// define builds an operation from its input and output types and its
// method: the input is decoded once, strictly, for both transports
// (docs/protocol.md §3.3), and its required fields checked.
func define[In, Out any](o Operation, method func(*Service, context.Context, Caller, In) (Out, error)) *Operation {
	o.In, o.Out = reflect.TypeFor[In](), reflect.TypeFor[Out]()
	if o.Name == "post" {
		o.In = reflect.TypeFor[WireEnvelope]()
	}
	o.Params = paramsOf(o.In, o.Method)
	o.call = func(ctx context.Context, s *Service, c Caller, args []byte) (any, error) {
		var in In
		if d, ok := any(&in).(interface {
			decode(*Service, []byte) error
		}); ok {
			if err := d.decode(s, args); err != nil {
				return nil, err
			}
		} else {
			if len(args) == 0 {
				args = []byte("{}")
			}
			if err := DecodeStrict(args, &in); err != nil {
				return nil, err
			}
			if err := required(o.Params, reflect.ValueOf(&in).Elem()); err != nil {
				return nil, err
			}
		}
		return method(s, ctx, c, in)
	}
	return &o
}

// required refuses an input whose required fields are absent (zero).
func required(ps []Param, v reflect.Value) error {
	for _, p := range ps {
		if !p.Required {
			continue
		}
		for i := range v.NumField() {
			if jsonName(v.Type().Field(i)) == p.Name && v.Field(i).IsZero() {
				return Invalid(p.Name, "%s is required", p.Name)
			}
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// paramsOf reads an input type's fields: the json name, `in` (default
// query for GET and DELETE, body otherwise), `header`, `required`, `doc`.
func paramsOf(t reflect.Type, method string) []Param {
	var ps []Param
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("ignored") == "true" || jsonName(f) == "" || jsonName(f) == "-" {
			continue
		}
		p := Param{Name: jsonName(f), In: f.Tag.Get("in"), Header: f.Tag.Get("header"), Required: f.Tag.Get("required") == "true", Does: f.Tag.Get("doc"), profile: f.Tag.Get("profile")}
		if p.In == "" {
			p.In = "body"
			if method == "GET" || method == "DELETE" {
				p.In = "query"
			}
		}
		p.Type, p.Enum = jsonType(f.Type)
		ps = append(ps, p)
	}
	return ps
}

var (
	tableOnce  sync.Once
	operations []*Operation
)

// table is the operation table, built once (its entries refer to methods
// that read it, hence not a package-level initializer).
func table() []*Operation {
	tableOnce.Do(func() { operations = build() })
	return operations
}

// build lists the operations of this release. Each method's doc lists its
// refusals.
func build() []*Operation {
	return []*Operation{
		define(Operation{Name: "get_manifest", Title: "Get the Parley manifest", Method: "GET", Path: "/v1/manifest", ReadOnly: true, Idempotent: true,
			Does: "Start here. Returns everything needed to speak Parley: version, realm, limits, the speech acts (what each does, whom it awaits, what it marks), the states and their transitions, rights, refusal reasons, the envelope's schema and every operation with its parameters."},
			(*Service).GetManifest),
		define(Operation{Name: "whoami", Title: "Who am I", Right: RightRead, Method: "GET", Path: "/v1/whoami", ReadOnly: true, Idempotent: true,
			Does: "Returns the identity bound to your token, its rights and label. Your messages are posted as this identity."},
			(*Service).WhoAmI),
		define(Operation{Name: "post", Title: "Post a message", Right: RightWrite, Method: "POST", Path: "/v1/messages", Created: true,
			Location: func(out any) string { return "/v1/threads/" + out.(PostResult).Thread.ID },
			Does:     "Posts one message (an envelope) into a thread, or opens a new thread with kind ask and no thread. The kind says what the message does and whom the thread then awaits (see the manifest's acts); answer proposes the state answered, decide (creator, lock holder or human) marks decided. You cannot reply to your own message with the same extension (self_reply). Returns the stored message and the thread's state after it."},
			(*Service).Post),
		define(Operation{Name: "get_thread", Title: "Read a thread", Right: RightRead, Method: "GET", Path: "/v1/threads/{thread}", ReadOnly: true, Idempotent: true,
			Does: "Returns a thread's state, whom it awaits, and a page of its messages in order of creation, nested by parent within the page (a message whose parent is on an earlier page stands at the top level). Pass the returned cursor for the next page; null means the end."},
			(*Service).GetThread),
		define(Operation{Name: "list_threads", Title: "List threads", Right: RightRead, Method: "GET", Path: "/v1/threads", ReadOnly: true, Idempotent: true,
			Does: "Lists threads without their messages, newest first, optionally only those in one state. Pass the returned cursor to get the next page; null means the end."},
			(*Service).ListThreads),
		define(Operation{Name: "mark", Title: "Mark a thread's state", Right: RightWrite, Method: "POST", Path: "/v1/threads/{thread}/mark", Idempotent: true,
			Does: "Sets a thread's state. Needs authority over the thread: its creator, a lock holder or a human. States move forward one or two steps (open → answered → decided → closed) or to a side state (deferred, obsolete, rejected). A model's mark is a proposal until a lock holder or human confirms it; a confirmed state is changed only by whoever may change what confirmed it."},
			(*Service).Mark),
		define(Operation{Name: "confirm", Title: "Confirm a proposed state", Right: RightWrite, Method: "POST", Path: "/v1/threads/{thread}/confirm", Idempotent: true,
			Does: "Confirms the thread's current proposal. Give the state you saw; if the proposal changed meanwhile nothing is confirmed (invalid_transition). Only a lock holder or a human may confirm."},
			(*Service).Confirm),
		define(Operation{Name: "reopen", Title: "Reopen a thread", Right: RightWrite, Method: "POST", Path: "/v1/threads/{thread}/reopen", Idempotent: true,
			Does: "Sets a closed thread, or one in a side state, open again; it then awaits anyone but you. Closed: its creator (when the closed is a proposal or its own), a lock holder or a human. Side state: a lock holder or a human."},
			(*Service).Reopen),
		define(Operation{Name: "events", Title: "Read state changes", Right: RightRead, Method: "GET", Path: "/v1/events", ReadOnly: true, Idempotent: true,
			Does: "Returns state changes (events), oldest first, of one thread or of the whole instance. Keep the returned cursor and pass it as since to get only what is new; the instance's feed may repeat an event within feed_settle_ms (drop repeats by thread and seq)."},
			(*Service).Events),
		define(Operation{Name: "inbox", Title: "Threads awaiting you", Right: RightRead, Method: "GET", Path: "/v1/inbox", ReadOnly: true, Idempotent: true,
			Does: "Lists the threads whose turn is yours: addressed to your identity (or one extension), open calls you did not open yourself, and for humans the escalations. Keep the cursor and pass it as since to see only new turns; a turn may repeat within feed_settle_ms (drop repeats by id and awaiting_version)."},
			(*Service).Inbox),
		define(Operation{Name: "queue", Title: "The review queue", Right: RightLock, Method: "GET", Path: "/v1/queue", ReadOnly: true, Idempotent: true,
			Does: "Lists the threads that need a moderator, oldest first: escalations (awaiting a human) and unconfirmed proposals, each with why and the message to look at. Needs the lock right (humans hold it)."},
			(*Service).Queue),
		define(Operation{Name: "create_token", Title: "Create a token", Right: RightHuman, Method: "POST", Path: "/v1/tokens", Created: true,
			Location: func(any) string { return "/v1/tokens" },
			Does:     "Creates a token for an identity of this realm or a human, with rights. The secret is in this answer only; store it now. Humans only."},
			(*Service).IssueToken),
		define(Operation{Name: "list_tokens", Title: "List tokens", Right: RightHuman, Method: "GET", Path: "/v1/tokens", ReadOnly: true, Idempotent: true,
			Does: "Lists every token, revoked ones included, in id order: id, identity, rights, label, when created and revoked. Never a secret. Humans only."},
			(*Service).ListTokens),
		define(Operation{Name: "revoke_token", Title: "Revoke a token", Right: RightHuman, Method: "DELETE", Path: "/v1/tokens/{id}", Idempotent: true,
			Does: "Revokes a token by its id (tk_…). It stops working everywhere within the manifest's token_cache_s. Humans only."},
			(*Service).Revoke),
		define(Operation{Name: "get_claim", Title: "Read a claim", Right: RightRead, Profile: ProfileDialectic, Method: "GET", Path: "/v1/claims/{claim}", ReadOnly: true, Idempotent: true,
			Does: "Returns a claim (dialectic profile) with its evidence, its state (unverified, supported, verified, refuted, superseded), whether it has expired, what it supersedes and what superseded it, and its whole history: every attestation, refutation, verification and supersession with actor, time, evidence and message."},
			(*Service).GetClaim),
		define(Operation{Name: "list_claims", Title: "List claims", Right: RightRead, Profile: ProfileDialectic, Method: "GET", Path: "/v1/claims", ReadOnly: true, Idempotent: true,
			Does: "Lists claims (dialectic profile), newest first, optionally of one thread and/or in one state. Pass the returned cursor to get the next page; null means the end."},
			(*Service).ListClaims),
		define(Operation{Name: "subscribe", Title: "Subscribe to deliveries", Right: RightRead, Profile: ProfilePush, Method: "POST", Path: "/v1/subscriptions", Created: true,
			Location: func(any) string { return "/v1/subscriptions" },
			Does:     "Asks for signed webhooks (push profile): turn (your inbox gained a thread), state (a thread's state changed), message (a message was stored), for one thread or the whole instance. Returns the subscription and its signing secret, once: store it. Deliveries: POST url with the entry's JSON and the headers Parley-Event, Parley-Delivery (a stable id: drop repeats) and Parley-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")>; retried with backoff for 24 hours until a 2xx."},
			(*Service).Subscribe),
		define(Operation{Name: "list_subscriptions", Title: "List your subscriptions", Right: RightRead, Profile: ProfilePush, Method: "GET", Path: "/v1/subscriptions", ReadOnly: true, Idempotent: true,
			Does: "Lists your token's subscriptions (push profile) with how their deliveries went: delivered, failed attempts, dropped, pending, last success and last failure. Never a secret."},
			(*Service).ListSubscriptions),
		define(Operation{Name: "unsubscribe", Title: "Unsubscribe", Right: RightRead, Profile: ProfilePush, Method: "DELETE", Path: "/v1/subscriptions/{id}", Idempotent: true,
			Does: "Removes one of your subscriptions (push profile); its deliveries stop."},
			(*Service).Unsubscribe),
	}
}

// AllOperations lists every operation this build knows, whatever the
// profiles: what a deployment must route (a profile that is off answers
// its operations with not_found).
func AllOperations() []*Operation { return table() }

// Operations lists the operations this instance serves.
func (s *Service) Operations() []*Operation {
	var out []*Operation
	for _, op := range table() {
		if s.serves(op.Profile) {
			out = append(out, op)
		}
	}
	return out
}

// Operation finds a served operation by name.
func (s *Service) Operation(name string) (*Operation, bool) {
	for _, op := range s.Operations() {
		if op.Name == name {
			return op, true
		}
	}
	return nil, false
}

func (s *Service) serves(profile string) bool {
	return profile == "" || (profile == ProfileDialectic && s.dialectic) || (profile == ProfilePush && s.pushOn)
}

// Call runs one operation for a caller, in the order of docs/protocol.md §5.8:
// the token's right for the operation, then the input (args: one JSON
// object, the same for both transports), then the operation itself, which
// checks authority and state. Authentication is the transport's first
// step (Authenticate); a public operation may have no caller.
func (s *Service) Call(ctx context.Context, op *Operation, c Caller, args []byte) (any, error) {
	if err := s.Permit(op, c); err != nil {
		return nil, err
	}
	return op.call(ctx, s, c, args)
}

// Permit is the first half of Call: whether the caller may call the
// operation at all. A transport that must read a request before Call (a
// body to size) asks first, so that a token without the right gets
// token_right_missing whatever it sent.
func (s *Service) Permit(op *Operation, c Caller) error {
	if !s.serves(op.Profile) {
		return refuse(ReasonNotFound, "this instance does not run the %s profile", op.Profile)
	}
	if op.Right == "" {
		return nil
	}
	return need(c, op.Right)
}
