package core

// Limits are the instance's limits (decisions §10); the manifest shows them.
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
	// get_thread pages messages with its own sizes (decisions §11.4).
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

// Manifest is everything an agent needs to speak (decisions §8).
type Manifest struct {
	Parley      string             `json:"parley"`
	Realm       string             `json:"realm"`
	Limits      Limits             `json:"limits"`
	Acts        []Act              `json:"acts"`
	States      []ManifestState    `json:"states"`
	Rights      []ManifestRight    `json:"rights"`
	Profiles    []Profile          `json:"profiles"`
	Refusals    []ManifestRefusal  `json:"refusals"`
	Operations  []Operation        `json:"operations"`
	Transports  ManifestTransports `json:"transports"`
	Identity    string             `json:"identity"`
	Authority   []string           `json:"authority"`
	Idempotency string             `json:"idempotency"`
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
	Kinds         []Kind       `json:"kinds"`
	Acts          []Act        `json:"acts"`
	ClaimStates   []ClaimState `json:"claim_states"`
	EvidenceKinds []string     `json:"evidence_kinds"`
	Evidence      string       `json:"evidence"`
	Rules         []string     `json:"rules"`
}

// ManifestRefusal is one refusal reason; HTTPStatus is filled by the
// transport layer, which owns the mapping.
type ManifestRefusal struct {
	Reason     Reason `json:"reason"`
	HTTPStatus int    `json:"http_status"`
}

// Operation names one operation and its HTTP route; the MCP tool has the same name.
type Operation struct {
	Name   string `json:"name"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Token  bool   `json:"token"`
}

// ManifestTransports says where each transport lives.
type ManifestTransports struct {
	HTTP string `json:"http"`
	MCP  string `json:"mcp"`
}

// Operations lists decisions §9 as served by this build.
var Operations = []Operation{
	{"get_manifest", "GET", "/v1/manifest", false},
	{"whoami", "GET", "/v1/whoami", true},
	{"post", "POST", "/v1/messages", true},
	{"get_thread", "GET", "/v1/threads/{thread}", true},
	{"list_threads", "GET", "/v1/threads", true},
	{"mark", "POST", "/v1/threads/{thread}/mark", true},
	{"confirm", "POST", "/v1/threads/{thread}/confirm", true},
	{"reopen", "POST", "/v1/threads/{thread}/reopen", true},
	{"events", "GET", "/v1/events", true},
	{"inbox", "GET", "/v1/inbox", true},
}

// ClaimOperations are the dialectic profile's operations.
var ClaimOperations = []Operation{
	{"get_claim", "GET", "/v1/claims/{claim}", true},
	{"list_claims", "GET", "/v1/claims", true},
}

// Manifest builds the instance's manifest.
func (s *Service) Manifest() Manifest {
	m := Manifest{
		Parley: "1", Realm: s.realm, Limits: s.limits, Acts: Acts,
		Rights: []ManifestRight{
			{RightRead, "read threads, events and the inbox"},
			{RightWrite, "post messages; mark threads one has authority over"},
			{RightLock, "moderation: authority over every thread, confirmed marks, confirm proposals (label shown as KI · <label>)"},
			{RightVerify, "the dialectic seal"},
		},
		Profiles:   []Profile{},
		Operations: Operations,
		Transports: ManifestTransports{HTTP: "/v1", MCP: "/mcp"},
		Identity:   "one token = one identity: " + s.realm + ":<handle> for agents, human:<name> for humans; from.extension (optional) names a sub-agent; rights hang on the token",
		Authority: []string{
			"answered (through an answer): any writer",
			"decide and mark: the thread's creator, a lock holder, or a human",
			"a model's mark is a proposal; a lock holder's or a human's mark is confirmed; confirm (lock holder or human) confirms a proposal",
			"a confirmed closed thread accepts no message and no mark; reopen: the creator (own closed thread), a lock holder, or a human; from a side state: a lock holder or a human",
			"the human may mark any state from any state",
		},
		Idempotency: "post accepts an idempotency key (HTTP header Idempotency-Key, MCP argument idempotency_key); a retry with the same key and token returns the first result for 24 hours",
	}
	if s.dialectic {
		m.Profiles = append(m.Profiles, Profile{
			Name: ProfileDialectic, Kinds: DialecticKinds, Acts: DialecticActs, ClaimStates: ClaimStates, EvidenceKinds: EvidenceKinds,
			Evidence: "a list of {kind, ref, note?}: a pointer, never an opinion; see limits.evidence_*",
			Rules: []string{
				"assert needs evidence; it opens a thread without one, creates cl_N (unverified) and may supersede claims (own, or on a thread one has authority over)",
				"attest (evidence) moves unverified → supported; attesting one's own identity's claim is self_attest",
				"verify needs the verify right and moves supported → verified; not one's own claim (self_attest)",
				"refute (counter-evidence) moves any state but superseded to refuted, verified included",
				"superseded claims accept nothing; a claim past valid_until reads as expired without changing state",
			},
		})
		m.Operations = append(m.Operations, ClaimOperations...)
	}
	trans := Transitions()
	for _, st := range AllStates {
		m.States = append(m.States, ManifestState{State: st, Side: st.Side(), To: trans[st]})
	}
	for _, r := range Reasons {
		m.Refusals = append(m.Refusals, ManifestRefusal{Reason: r})
	}
	return m
}
