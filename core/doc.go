// Package core is Parley's domain: the envelope, the nine speech acts, the
// thread state machine, the one rule for who may mark what, the refusal
// reasons, the manifest, and the service operations that both transports
// call. It imports no AWS, HTTP or MCP package (a test enforces it); storage
// is the Store interface, implemented once, on DynamoDB, in infra/dynamo.
//
// The thread state machine (docs/protocol.md §5):
//
//	ask ─▶ open ──answer──▶ answered ──decide──▶ decided ──mark──▶ closed
//	        │ └──────── decide ────────▶ │ └──────── mark ─────────▶ │
//	        │                                                        │
//	        └──▶ deferred · obsolete · rejected ◀── (closed only while a proposal)
//
//	forward only, one or two steps (open → closed is three: refused)
//	side states are endpoints; reopen (lock holder, human) sets open again
//	a confirmed closed accepts nothing; reopen: creator, lock holder, human
//	the human may re-mark any state from any state
//
// Marks by a model without the lock right are proposals (state_confirmed_at
// null) until a lock holder or a human confirms them. Every change of state,
// confirmation included, appends an event whose from is the previous to.
//
// Concurrency: every write that depends on a read is one conditional
// DynamoDB write (Store.Commit) conditioned on the version that was read; a
// lost race re-reads and decides again (Service.retry), a bounded number of
// times, then answers unavailable.
package core
