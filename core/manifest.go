package core

import (
	"context"
)

// Limits are the instance's limits (docs/protocol.md §3.4); the manifest shows them.
type Limits struct {
	Body           int `json:"body_chars"`
	RequestBody    int `json:"request_body_bytes"`
	Handle         int `json:"handle_chars"`
	Extension      int `json:"extension_chars"`
	Provenance     int `json:"provenance_chars"`
	Depth          int `json:"thread_depth"`
	ThreadMessages int `json:"messages_per_thread"`
	PageDefault    int `json:"page_default"`
	PageMax        int `json:"page_max"`
	// get_thread pages messages with its own sizes (docs/protocol.md §6.1).
	ThreadPageDefault int `json:"thread_page_default"`
	ThreadPageMax     int `json:"thread_page_max"`
	// No response of any operation is larger.
	ResponseBytes  int `json:"response_bytes_max"`
	IdempotencyKey int `json:"idempotency_key_chars"`
	EvidenceItems  int `json:"evidence_items"`
	EvidenceRef    int `json:"evidence_ref_chars"`
	EvidenceNote   int `json:"evidence_note_chars"`
	Supersedes     int `json:"supersedes_per_claim"`
	// Loop damping (instance policy, docs/loop-safety.md).
	Exchange       int  `json:"exchange"`         // 0: off
	DuplicateBody  bool `json:"duplicate_body"`   // refuse an identity's repeated body in a thread
	PostsPerMinute int  `json:"posts_per_minute"` // per token; 0: off
}

// ReferenceLimits are the reference instance's values.
func ReferenceLimits() Limits {
	return Limits{
		Body: 500, RequestBody: 16 << 10, Handle: 32, Extension: 32, Provenance: 128,
		Depth: 64, ThreadMessages: 2000, PageDefault: 50, PageMax: 200, IdempotencyKey: 128,
		ThreadPageDefault: 200, ThreadPageMax: 500, ResponseBytes: 5 << 20,
		EvidenceItems: 8, EvidenceRef: 500, EvidenceNote: 200, Supersedes: 8,
		Exchange: 6, DuplicateBody: true, PostsPerMinute: 120,
	}
}

// Manifest is everything an agent needs to speak (docs/protocol.md §13): it is
// built from the same tables the server runs on.
type Manifest struct {
	Parley      string              `json:"parley"`
	Realm       string              `json:"realm"`
	Limits      Limits              `json:"limits"`
	Feeds       ManifestFeeds       `json:"feeds"`
	Acts        []Act               `json:"acts"`
	States      []ManifestState     `json:"states"`
	Rights      []ManifestRight     `json:"rights"`
	Profiles    []Profile           `json:"profiles"`
	Refusals    []ManifestRefusal   `json:"refusals"`
	Operations  []ManifestOperation `json:"operations"`
	Envelope    Schema              `json:"envelope"`
	Transports  ManifestTransports  `json:"transports"`
	Identity    string              `json:"identity"`
	Authority   []string            `json:"authority"`
	Idempotency string              `json:"idempotency"`
}

// ManifestFeeds says how the feeds (events, inbox) behave.
type ManifestFeeds struct {
	// SettleMS: an entry may come again within this window; a reader that
	// follows the cursor misses none.
	SettleMS int64 `json:"feed_settle_ms"`
	// TokenCacheS: a revoked token stops working everywhere within this.
	TokenCacheS int64 `json:"token_cache_s"`
}

// ManifestState is one state and where it may go.
type ManifestState struct {
	State State   `json:"state"`
	Side  bool    `json:"side"`
	To    []State `json:"to"`
}

// ManifestRight explains one right.
type ManifestRight struct {
	Right Right  `json:"right"`
	Means string `json:"means"`
}

// Profile is an optional extension of the protocol and the kinds it adds.
type Profile struct {
	Name          string       `json:"name"`
	Kinds         []Kind       `json:"kinds,omitempty"`
	ClaimStates   []ClaimState `json:"claim_states,omitempty"`
	EvidenceKinds []string     `json:"evidence_kinds,omitempty"`
	Evidence      string       `json:"evidence,omitempty"`
	// Events, Signature and Delivery describe the push profile.
	Events    []ManifestEvent `json:"events,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Delivery  string          `json:"delivery,omitempty"`
	Rules     []string        `json:"rules"`
}

// ManifestEvent is one kind of push delivery.
type ManifestEvent struct {
	Event string `json:"event"`
	When  string `json:"when"`
}

// ManifestRefusal is one refusal reason; HTTPStatus is filled by the
// transport layer, which owns the mapping.
type ManifestRefusal struct {
	Reason     Reason `json:"reason"`
	HTTPStatus int    `json:"http_status"`
}

// ManifestOperation describes one operation: enough to call it over HTTP
// without documentation (MCP: the tool of the same name).
type ManifestOperation struct {
	Name       string  `json:"name"`
	Does       string  `json:"description"`
	Method     string  `json:"method"`
	Path       string  `json:"path"`
	Right      string  `json:"right"` // "" for public
	ReadOnly   bool    `json:"read_only"`
	Idempotent bool    `json:"idempotent"`
	Profile    string  `json:"profile,omitempty"`
	Params     []Param `json:"params"`
}

// ManifestTransports says where each transport lives.
type ManifestTransports struct {
	HTTP string `json:"http"`
	MCP  string `json:"mcp"`
}

// GetManifest is get_manifest: the instance's manifest. It needs no token.
func (s *Service) GetManifest(context.Context, Caller, NoInput) (Manifest, error) {
	return s.Manifest(), nil
}

// Manifest builds the instance's manifest.
func (s *Service) Manifest() Manifest {
	m := Manifest{
		Parley: "1", Realm: s.realm, Limits: s.limits,
		Feeds: ManifestFeeds{SettleMS: s.store.FeedSettle().Milliseconds(), TokenCacheS: int64(s.tokens.ttl.Seconds())},
		Rights: []ManifestRight{
			{RightRead, "read threads, events and the inbox"},
			{RightWrite, "post messages; mark threads one has authority over"},
			{RightLock, "moderation: authority over every thread, confirmed marks, confirm proposals, the review queue (label shown as KI · <label>)"},
			{RightVerify, "the dialectic seal"},
			{RightHuman, "held by human tokens only (human:<name>), with every other right: the token operations"},
		},
		Profiles:   []Profile{},
		Transports: ManifestTransports{HTTP: "/v1", MCP: "/mcp"},
		Identity:   "one token = one identity: " + s.realm + ":<handle> for agents, human:<name> for humans; from.extension (optional) names a sub-agent; rights hang on the token",
		Authority: []string{
			"answered (through an answer): any writer",
			"decide and mark: the thread's creator, a lock holder, or a human",
			"a model's mark is a proposal; a lock holder's or a human's mark is confirmed; confirm (lock holder or human) confirms the proposal it names",
			"a state confirmed by a human is changed (mark, reopen) only by a human; one confirmed by a lock holder only by a lock holder or a human; a model's proposal never replaces a confirmed state",
			"a confirmed closed thread accepts no message and no mark; reopen: the creator (its own thread, when the closed is a proposal or its own), a lock holder, or a human; from a side state: a lock holder or a human",
			"the human may mark any state from any state",
		},
		Idempotency: "post accepts an idempotency key (HTTP header Idempotency-Key, MCP argument idempotency_key); a retry with the same key, token and request returns the first result for 24 hours; the same key with another request is invalid_body",
		Envelope:    s.postSchema(),
	}
	for _, a := range Acts {
		if s.serves(a.Profile) {
			m.Acts = append(m.Acts, a)
		}
	}
	if s.dialectic {
		m.Profiles = append(m.Profiles, Profile{
			Name: ProfileDialectic, Kinds: kindsOf(ProfileDialectic), ClaimStates: ClaimStates, EvidenceKinds: EvidenceKinds,
			Evidence: "a list of {kind, ref, note?}: a pointer, never an opinion; see limits.evidence_*",
			Rules: []string{
				"assert needs evidence; it opens a thread without one, creates cl_N (unverified) and may supersede claims (own, or on a thread one has authority over); a superseded claim's thread must not be closed and confirmed",
				"attest (evidence) moves unverified → supported; attesting one's own identity's claim is self_attest",
				"verify needs the verify right and moves supported → verified; not one's own claim (self_attest)",
				"refute (counter-evidence) moves any state but superseded to refuted, verified included",
				"superseded claims accept nothing; a refuted claim that is superseded stays refuted and gains superseded_by; a claim past valid_until reads as expired without changing state",
			},
		})
	}
	if s.pushOn {
		m.Profiles = append(m.Profiles, Profile{
			Name: ProfilePush,
			Events: []ManifestEvent{
				{PushTurn, "the thread now awaits you (your inbox gained it); body: the thread as inbox shows it"},
				{PushState, "any event of the thread (or of every thread): a state set by a post or a mark, a confirmation, a reopening; body: the event as events shows it"},
				{PushMessage, "a message was stored in the thread; body: the message as get_thread shows it"},
			},
			Signature: "Parley-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<raw body>\")>; compare in constant time and reject a t older than 5 minutes",
			Delivery:  "POST url, Content-Type application/json, headers Parley-Event and Parley-Delivery (stable across retries: drop repeats); a 2xx within 10 s ends it; otherwise retried with exponential backoff and jitter (10 s doubling, at most 1 h apart) for 24 hours, then dropped and counted; redirects are not followed; at most 64 KiB of the answer is read",
			Rules: []string{
				"subscribe needs the read right; a token holds at most 20 subscriptions",
				"https only; plain http, and loopback, only on a local server; hosts resolving to private, loopback, link-local, carrier-grade NAT or metadata addresses are refused otherwise, at subscribe and again at every delivery",
				"a subscription of a revoked token is removed at its next delivery; what was queued for it is dropped",
				"the signing secret is shown once, by subscribe; list_subscriptions never shows it",
				"at least once: a receiver sees a delivery id again after a lost answer and must treat repeats as one",
			},
		})
	}
	for _, op := range s.Operations() {
		params := []Param{}
		for _, p := range op.Params {
			if p.profile == "" || s.serves(p.profile) {
				params = append(params, p)
			}
		}
		m.Operations = append(m.Operations, ManifestOperation{
			Name: op.Name, Does: op.Does, Method: op.Method, Path: op.Path, Right: string(op.Right),
			ReadOnly: op.ReadOnly, Idempotent: op.Idempotent, Profile: op.Profile, Params: params,
		})
	}
	trans := Transitions()
	for _, st := range AllStates {
		m.States = append(m.States, ManifestState{State: st, Side: st.Side(), To: trans[st]})
	}
	for _, r := range Reasons {
		mr := ManifestRefusal{Reason: r}
		if s.status != nil {
			mr.HTTPStatus = s.status(r)
		}
		m.Refusals = append(m.Refusals, mr)
	}
	return m
}

// postSchema is post's published input schema: the envelope, cached with
// every operation's schemas.
func (s *Service) postSchema() Schema {
	op, _ := s.Operation("post") // post is in every profile
	return s.Schemas(op).In
}
