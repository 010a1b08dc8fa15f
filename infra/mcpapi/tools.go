package mcpapi

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/refusal"
)

// The tools' inputs. Each field is described for the model that calls it;
// the descriptions become the input schemas. thread/parent are typed any so
// that a key, a number and a numeric string are all accepted, as on HTTP.

type noInput struct{}

type postInput struct {
	Parley         string           `json:"parley,omitempty" jsonschema:"protocol version; if given it must be \"1\""`
	Kind           string           `json:"kind" jsonschema:"the speech act: ask, answer, clarify, inform, propose, object, ack, decide or escalate; with the dialectic profile also assert, attest, refute or verify"`
	Thread         any              `json:"thread,omitempty" jsonschema:"the thread to post into (th_N, N or \"N\"); omit it with kind ask to open a new thread"`
	Parent         any              `json:"parent,omitempty" jsonschema:"the message replied to (msg_N, N or \"N\"); omitted means the thread's root message"`
	From           *postFrom        `json:"from,omitempty" jsonschema:"who within the token's identity is speaking"`
	Body           string           `json:"body" jsonschema:"the message, at most 500 characters, not blank"`
	Provenance     *core.Provenance `json:"provenance,omitempty" jsonschema:"optional: the model and client that produced the message, at most 128 characters each"`
	IdempotencyKey string           `json:"idempotency_key,omitempty" jsonschema:"optional, 1-128 printable characters: a retry with the same key returns the first result and posts nothing new"`
	Claim          any              `json:"claim,omitempty" jsonschema:"dialectic attest, refute, verify only: the claim acted on (cl_N, N or \"N\"); thread and parent default to the claim's"`
	Evidence       []core.Evidence  `json:"evidence,omitempty" jsonschema:"dialectic only: pointers {kind: url|hash|artifact|commit|log|reproducer|note|other, ref (<=500 chars), note (<=200)}, at most 8; required for assert, attest and refute"`
	Supersedes     []string         `json:"supersedes,omitempty" jsonschema:"assert only: claims (cl_N) this claim replaces; yours, or on threads you have authority over"`
	ValidUntil     string           `json:"valid_until,omitempty" jsonschema:"assert only: RFC 3339 time after which the claim reads as expired"`
}

type postFrom struct {
	Extension string `json:"extension,omitempty" jsonschema:"sub-agent name, ^[a-z0-9][a-z0-9_-]{0,31}$; loop protection is per (identity, extension)"`
}

type threadInput struct {
	Thread any `json:"thread" jsonschema:"the thread: th_N, N or \"N\""`
}

type listThreadsInput struct {
	State  string `json:"state,omitempty" jsonschema:"only threads in this state: open, answered, decided, closed, deferred, obsolete or rejected"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the cursor of the previous page, to continue"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, default 50, at most 200"`
}

type markInput struct {
	Thread any    `json:"thread" jsonschema:"the thread: th_N, N or \"N\""`
	State  string `json:"state" jsonschema:"the target state: answered, decided, closed, deferred, obsolete or rejected (open only for humans; use reopen)"`
}

type eventsInput struct {
	Thread any    `json:"thread,omitempty" jsonschema:"only this thread's events (th_N, N or \"N\"); omit for the whole instance"`
	Since  string `json:"since,omitempty" jsonschema:"the cursor of an earlier reply: only newer events come back"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, default 50, at most 200"`
}

type claimInput struct {
	Claim any `json:"claim" jsonschema:"the claim: cl_N, N or \"N\""`
}

type listClaimsInput struct {
	Thread any    `json:"thread,omitempty" jsonschema:"only claims made in this thread (th_N, N or \"N\")"`
	State  string `json:"state,omitempty" jsonschema:"only claims in this state: unverified, supported, verified, refuted or superseded"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the cursor of the previous page, to continue"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, default 50, at most 200"`
}

type inboxInput struct {
	Extension *string `json:"extension,omitempty" jsonschema:"narrow to this extension of your identity; also hides open calls you opened with it"`
	Since     string  `json:"since,omitempty" jsonschema:"the cursor of an earlier reply: only threads whose turn came since"`
	Limit     int     `json:"limit,omitempty" jsonschema:"page size, default 50, at most 200"`
}

// tool is one operation as an MCP tool: the same name as in decisions §9.
type tool struct {
	name, title, description string
	public                   bool // callable without a token
	readOnly, idempotent     bool
	in, out                  reflect.Type
	call                     func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error)
}

func (a *API) tools() []tool {
	svc := a.svc
	return []tool{
		{
			name: "get_manifest", title: "Get the Parley manifest", public: true, readOnly: true, idempotent: true,
			description: "Start here. Returns everything needed to speak Parley: version, realm, limits, the nine speech acts (what each does, whom it awaits, what it marks), the states and their transitions, rights, refusal reasons, and the operations. Needs no token.",
			in:          reflect.TypeFor[noInput](), out: reflect.TypeFor[core.Manifest](),
			call: func(context.Context, core.Caller, json.RawMessage) (any, error) {
				return refusal.Manifest(svc.Manifest()), nil
			},
		},
		{
			name: "whoami", title: "Who am I", readOnly: true, idempotent: true,
			description: "Returns the identity bound to your token, its rights and label. Your messages are posted as this identity.",
			in:          reflect.TypeFor[noInput](), out: reflect.TypeFor[core.Whoami](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				if err := decode(args, &noInput{}); err != nil {
					return nil, err
				}
				return svc.WhoAmI(ctx, c)
			},
		},
		{
			name: "post", title: "Post a message",
			description: "Posts one message (an envelope) into a thread, or opens a new thread with kind ask and no thread. The kind says what the message does and whom the thread then awaits; answer proposes the state answered, decide (creator, lock holder or human) marks decided. You cannot reply to your own message with the same extension (self_reply). Returns the stored message and the thread's state after it.",
			in:          reflect.TypeFor[postInput](), out: reflect.TypeFor[core.PostResult](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				env, key, err := splitIdempotencyKey(args)
				if err != nil {
					return nil, err
				}
				return svc.Post(ctx, c, env, key)
			},
		},
		{
			name: "get_thread", title: "Read a thread", readOnly: true, idempotent: true,
			description: "Returns a thread with its state, whom it awaits, and its messages as a tree (replies nested under their parent, in order of creation).",
			in:          reflect.TypeFor[threadInput](), out: reflect.TypeFor[core.ThreadView](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in threadInput
				id, err := decodeThread(args, &in, &in.Thread, true)
				if err != nil {
					return nil, err
				}
				return svc.GetThread(ctx, c, core.GetThreadQuery{Thread: id})
			},
		},
		{
			name: "list_threads", title: "List threads", readOnly: true, idempotent: true,
			description: "Lists threads without their messages, newest first, optionally only those in one state. Pass the returned cursor to get the next page; an empty cursor means there is no more.",
			in:          reflect.TypeFor[listThreadsInput](), out: reflect.TypeFor[core.ThreadPage](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in listThreadsInput
				if err := decode(args, &in); err != nil {
					return nil, err
				}
				return svc.ListThreads(ctx, c, core.ListThreadsQuery{State: in.State, Cursor: in.Cursor, Limit: in.Limit})
			},
		},
		{
			name: "mark", title: "Mark a thread's state", idempotent: true,
			description: "Sets a thread's state. Needs authority over the thread: its creator, a lock holder or a human. States move forward one or two steps (open → answered → decided → closed) or to a side state (deferred, obsolete, rejected). A model's mark is a proposal until a lock holder or human confirms it.",
			in:          reflect.TypeFor[markInput](), out: reflect.TypeFor[core.ThreadState](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in markInput
				id, err := decodeThread(args, &in, &in.Thread, true)
				if err != nil {
					return nil, err
				}
				if in.State == "" {
					return nil, core.Invalid("state", "state is required")
				}
				return svc.Mark(ctx, c, id, in.State)
			},
		},
		{
			name: "confirm", title: "Confirm a proposed state", idempotent: true,
			description: "Confirms the thread's current proposed state as it stands. Only a lock holder or a human may confirm.",
			in:          reflect.TypeFor[threadInput](), out: reflect.TypeFor[core.ThreadState](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in threadInput
				id, err := decodeThread(args, &in, &in.Thread, true)
				if err != nil {
					return nil, err
				}
				return svc.Confirm(ctx, c, id)
			},
		},
		{
			name: "reopen", title: "Reopen a thread", idempotent: true,
			description: "Sets a closed thread, or one in a side state, open again. Closed: its creator, a lock holder or a human. Side state: a lock holder or a human.",
			in:          reflect.TypeFor[threadInput](), out: reflect.TypeFor[core.ThreadState](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in threadInput
				id, err := decodeThread(args, &in, &in.Thread, true)
				if err != nil {
					return nil, err
				}
				return svc.Reopen(ctx, c, id)
			},
		},
		{
			name: "events", title: "Read state changes", readOnly: true, idempotent: true,
			description: "Returns state changes (events), oldest first, of one thread or of the whole instance. Keep the returned cursor and pass it as since to get only what is new.",
			in:          reflect.TypeFor[eventsInput](), out: reflect.TypeFor[core.EventPage](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in eventsInput
				id, err := decodeThread(args, &in, &in.Thread, false)
				if err != nil {
					return nil, err
				}
				return svc.Events(ctx, c, core.EventsQuery{Thread: id, Since: in.Since, Limit: in.Limit})
			},
		},
		{
			name: "inbox", title: "Threads awaiting you", readOnly: true, idempotent: true,
			description: "Lists the threads whose turn is yours: addressed to your identity (or one extension), open calls you did not open yourself, and for humans the escalations. Keep the cursor and pass it as since to see only new turns.",
			in:          reflect.TypeFor[inboxInput](), out: reflect.TypeFor[core.InboxPage](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in inboxInput
				if err := decode(args, &in); err != nil {
					return nil, err
				}
				return svc.Inbox(ctx, c, core.InboxQuery{Extension: in.Extension, Since: in.Since, Limit: in.Limit})
			},
		},
	}
}

// claimTools are the dialectic profile's read operations.
func (a *API) claimTools() []tool {
	svc := a.svc
	return []tool{
		{
			name: "get_claim", title: "Read a claim", readOnly: true, idempotent: true,
			description: "Returns a claim (dialectic profile) with its evidence, its state (unverified, supported, verified, refuted, superseded), whether it has expired, what it supersedes and what superseded it, and its whole history: every attestation, refutation, verification and supersession with actor, time, evidence and message.",
			in:          reflect.TypeFor[claimInput](), out: reflect.TypeFor[core.ClaimView](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in claimInput
				if err := decode(args, &in); err != nil {
					return nil, err
				}
				if in.Claim == nil {
					return nil, core.Invalid("claim", "claim is required")
				}
				raw, _ := json.Marshal(in.Claim)
				id, err := core.ParseRefJSON(raw, "cl_", "claim")
				if err != nil {
					return nil, err
				}
				return svc.GetClaim(ctx, c, id)
			},
		},
		{
			name: "list_claims", title: "List claims", readOnly: true, idempotent: true,
			description: "Lists claims (dialectic profile), newest first, optionally of one thread and/or in one state. Pass the returned cursor to get the next page.",
			in:          reflect.TypeFor[listClaimsInput](), out: reflect.TypeFor[core.ClaimPage](),
			call: func(ctx context.Context, c core.Caller, args json.RawMessage) (any, error) {
				var in listClaimsInput
				id, err := decodeThread(args, &in, &in.Thread, false)
				if err != nil {
					return nil, err
				}
				return svc.ListClaims(ctx, c, core.ListClaimsQuery{Thread: id, State: in.State, Cursor: in.Cursor, Limit: in.Limit})
			},
		},
	}
}

// decode reads a tool's arguments strictly: unknown fields are invalid_body,
// as on HTTP. Absent arguments are an empty object.
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	return core.DecodeStrict(args, v)
}

// decodeThread decodes args into v and parses the thread reference it holds.
func decodeThread(args json.RawMessage, v any, thread *any, required bool) (int64, error) {
	if err := decode(args, v); err != nil {
		return 0, err
	}
	if *thread == nil {
		if required {
			return 0, core.Invalid("thread", "thread is required")
		}
		return 0, nil
	}
	raw, _ := json.Marshal(*thread)
	return core.ParseRefJSON(raw, "th_", "thread")
}

// splitIdempotencyKey takes idempotency_key out of post's arguments; the rest
// is the envelope, decoded by core exactly as an HTTP body.
func splitIdempotencyKey(args json.RawMessage) ([]byte, string, error) {
	var fields map[string]json.RawMessage
	if err := decode(args, &fields); err != nil {
		return nil, "", err
	}
	key := ""
	if raw, ok := fields["idempotency_key"]; ok {
		if err := json.Unmarshal(raw, &key); err != nil {
			return nil, "", core.Invalid("idempotency_key", "idempotency_key must be a string")
		}
		delete(fields, "idempotency_key")
	}
	env, err := json.Marshal(fields)
	return env, key, err
}

// schemaFor infers a JSON schema; thread and parent accept strings and integers.
func schemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	msg, err := messageSchema()
	if err != nil {
		return nil, err
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[core.MessageView](): msg,
	}})
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"thread", "parent", "claim"} {
		if p, ok := s.Properties[name]; ok && t != reflect.TypeFor[core.MessageView]() {
			if p.Type == "" && len(p.Types) == 0 {
				p.Types = []string{"string", "integer"}
			}
		}
	}
	return s, nil
}

// messageSchema describes a message without recursing into its replies,
// which have the same shape.
func messageSchema() (*jsonschema.Schema, error) {
	type shape struct {
		ID         string             `json:"id"`
		Kind       string             `json:"kind"`
		Thread     string             `json:"thread"`
		Parent     *string            `json:"parent"`
		From       core.Party         `json:"from"`
		AuthorKind string             `json:"author_kind"`
		Body       string             `json:"body"`
		Provenance *core.Provenance   `json:"provenance,omitempty"`
		CreatedAt  string             `json:"created_at"`
		Depth      int                `json:"depth"`
		Claim      *core.MessageClaim `json:"claim,omitempty"`
		Evidence   []core.Evidence    `json:"evidence,omitempty"`
		Supersedes []string           `json:"supersedes,omitempty"`
	}
	s, err := jsonschema.For[shape](nil)
	if err != nil {
		return nil, err
	}
	s.Properties["replies"] = &jsonschema.Schema{Type: "array", Description: "replies to this message, each of the same shape", Items: &jsonschema.Schema{Type: "object"}}
	return s, nil
}
