package httpapi_test

import (
	"fmt"
	"math"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/testenv"
)

// The price list and the Lambda shape the cost figures assume
// (us-east-1 list prices; docs/performance.md).
const (
	priceWRU       = 0.625 / 1e6 // on-demand write request unit
	priceRRU       = 0.125 / 1e6 // on-demand read request unit
	priceHTTPAPI   = 1.00 / 1e6  // HTTP API request (first 300 M a month)
	priceLambdaReq = 0.20 / 1e6
	priceGBSecond  = 0.0000133334 // Lambda arm64
	lambdaGB       = 0.25         // MemorySize 256
)

// latencyOf is the DynamoDB latency assumed per request on AWS (same
// region, warm connection), for the Lambda duration estimate.
var latencyOf = map[string]time.Duration{
	"GetItem": 4 * time.Millisecond, "BatchGetItem": 5 * time.Millisecond, "Query": 6 * time.Millisecond,
	"UpdateItem": 6 * time.Millisecond, "PutItem": 6 * time.Millisecond, "TransactWriteItems": 12 * time.Millisecond,
}

// benchWorld is a server whose DynamoDB client is metered, with the token
// cache of a warm Lambda and the reference damping (the rate limit set so
// high that it never refuses, but its counter is still written).
func benchWorld(b *testing.B) (*world, *testenv.Meter) {
	meter := testenv.NewMeter(dynamo.TableInput("parley"))
	lim := core.ReferenceLimits()
	lim.PostsPerMinute = math.MaxInt32
	// The embedded backend: capacity is measured from the requests, which
	// are the same on either server; latency is neither server's DynamoDB.
	env := testenv.On(b, testenv.Embedded, core.Options{Limits: lim, TokenCacheTTL: time.Minute}, meter.Option())
	api, err := httpapi.New(env.Service, env.Logger)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	return &world{t: b, env: env, srv: srv, cast: env.Cast(b)}, meter
}

type benchCase struct {
	name  string
	setup func(w *world, i int) []any // untimed; returns arguments for run
	run   func(w *world, args []any) resp
	want  int
}

// BenchmarkOperations measures, per operation through the HTTP handler:
// latency (p50, p99), DynamoDB round trips, the WRU and RRU it would cost
// on DynamoDB on-demand, the time spent in the embedded store, and the
// estimated cost per million requests on Lambda + HTTP API + DynamoDB.
func BenchmarkOperations(b *testing.B) {
	ev := []map[string]any{{"kind": "url", "ref": "https://example.org/evidence"}}
	cases := []benchCase{
		{"post_ask_new_thread", nil, func(w *world, a []any) resp {
			w.seq++
			return w.do("POST", "/v1/messages", w.cast.Alice, map[string]any{"kind": "ask", "body": fmt.Sprintf("Question number %d about the deployment?", w.seq)})
		}, 201},
		{"post_answer", func(w *world, i int) []any {
			th, _ := w.ask(w.cast.Alice, fmt.Sprintf("Which region, %d?", i))
			return []any{th}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/messages", w.cast.Bob, map[string]any{"kind": "answer", "thread": a[0], "body": "eu-west-1, for latency and price."})
		}, 201},
		{"post_clarify", func(w *world, i int) []any {
			th, _ := w.ask(w.cast.Alice, fmt.Sprintf("Which port, %d?", i))
			a := w.post(w.cast.Bob, map[string]any{"kind": "answer", "thread": th, "body": "8080."}, 201).body.str("message.id")
			return []any{th, a}
		}, func(w *world, a []any) resp {
			// sets awaiting anew (bob is due), changes no state
			return w.do("POST", "/v1/messages", w.cast.Alice, map[string]any{"kind": "clarify", "thread": a[0], "parent": a[1], "body": "For the API or for MCP?"})
		}, 201},
		{"post_reply_with_parent", func(w *world, i int) []any {
			th, root := w.ask(w.cast.Alice, fmt.Sprintf("Who reviews %d?", i))
			return []any{th, root}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/messages", w.cast.Bob, map[string]any{"kind": "inform", "thread": a[0], "parent": a[1], "body": "I can take it this afternoon."})
		}, 201},
		{"post_decide", func(w *world, i int) []any {
			th, _ := w.ask(w.cast.Alice, fmt.Sprintf("Ship %d?", i))
			a := w.post(w.cast.Bob, map[string]any{"kind": "answer", "thread": th, "body": "Yes."}, 201).body.str("message.id")
			return []any{th, a}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/messages", w.cast.Alice, map[string]any{"kind": "decide", "thread": a[0], "parent": a[1], "body": "Shipping."})
		}, 201},
		{"post_assert", nil, func(w *world, a []any) resp {
			w.seq++
			return w.do("POST", "/v1/messages", w.cast.Alice, map[string]any{"kind": "assert", "body": fmt.Sprintf("Build %d is reproducible.", w.seq), "evidence": ev})
		}, 201},
		{"post_attest", func(w *world, i int) []any {
			return []any{w.assert(w.cast.Alice, fmt.Sprintf("claim %d", i), nil)}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/messages", w.cast.Bob, map[string]any{"kind": "attest", "claim": a[0], "body": "Reproduced.", "evidence": ev})
		}, 201},
		{"post_refute", func(w *world, i int) []any {
			return []any{w.assert(w.cast.Alice, fmt.Sprintf("claim %d", i), nil)}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/messages", w.cast.Bob, map[string]any{"kind": "refute", "claim": a[0], "body": "Differs on arm64.", "evidence": ev})
		}, 201},
		{"post_verify", func(w *world, i int) []any {
			id := w.assert(w.cast.Alice, fmt.Sprintf("claim %d", i), nil)
			w.mustAct(w.cast.Bob, "attest", id)
			return []any{id}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/messages", w.cast.Verifier, map[string]any{"kind": "verify", "claim": a[0], "body": "Sealed."})
		}, 201},
		{"get_thread_10_messages", func(w *world, i int) []any {
			th, root := w.ask(w.cast.Alice, fmt.Sprintf("Long thread %d", i))
			for k := 0; k < 9; k++ {
				w.post([]string{w.cast.Bob, w.cast.Carol, w.cast.Mod}[k%3], map[string]any{"kind": "inform", "thread": th, "parent": root, "body": fmt.Sprintf("note %d", k)}, 201)
			}
			return []any{th}
		}, func(w *world, a []any) resp { return w.do("GET", "/v1/threads/"+a[0].(string), w.cast.Reader, nil) }, 200},
		{"list_threads_50", nil, func(w *world, a []any) resp { return w.do("GET", "/v1/threads?limit=50", w.cast.Reader, nil) }, 200},
		{"list_threads_by_state_50", nil, func(w *world, a []any) resp {
			return w.do("GET", "/v1/threads?state=open&limit=50", w.cast.Reader, nil)
		}, 200},
		{"inbox", nil, func(w *world, a []any) resp { return w.do("GET", "/v1/inbox?limit=50", w.cast.Alice, nil) }, 200},
		{"events_instance", nil, func(w *world, a []any) resp { return w.do("GET", "/v1/events?limit=50", w.cast.Reader, nil) }, 200},
		{"events_thread", func(w *world, i int) []any {
			th, _ := w.ask(w.cast.Alice, fmt.Sprintf("Evented %d", i))
			w.mark(w.cast.Alice, th, "decided")
			return []any{th}
		}, func(w *world, a []any) resp {
			return w.do("GET", "/v1/events?thread="+a[0].(string), w.cast.Reader, nil)
		}, 200},
		{"mark", func(w *world, i int) []any {
			th, _ := w.ask(w.cast.Alice, fmt.Sprintf("To mark %d", i))
			return []any{th}
		}, func(w *world, a []any) resp { return w.mark(w.cast.Alice, a[0].(string), "decided") }, 200},
		{"confirm", func(w *world, i int) []any {
			th, _ := w.ask(w.cast.Alice, fmt.Sprintf("To confirm %d", i))
			w.mark(w.cast.Alice, th, "decided")
			return []any{th}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/threads/"+a[0].(string)+"/confirm", w.cast.Mod, map[string]any{"state": "decided"})
		}, 200},
		{"reopen", func(w *world, i int) []any {
			th, _ := w.ask(w.cast.Alice, fmt.Sprintf("To reopen %d", i))
			w.mark(w.cast.Human, th, "closed")
			return []any{th}
		}, func(w *world, a []any) resp {
			return w.do("POST", "/v1/threads/"+a[0].(string)+"/reopen", w.cast.Human, nil) // a human's closed: the human reopens it
		}, 200},
		{"get_claim", func(w *world, i int) []any {
			id := w.assert(w.cast.Alice, fmt.Sprintf("claim %d", i), nil)
			w.mustAct(w.cast.Bob, "attest", id)
			return []any{id}
		}, func(w *world, a []any) resp { return w.do("GET", "/v1/claims/"+a[0].(string), w.cast.Reader, nil) }, 200},
		{"list_claims_50", nil, func(w *world, a []any) resp { return w.do("GET", "/v1/claims?limit=50", w.cast.Reader, nil) }, 200},
		{"whoami", nil, func(w *world, a []any) resp { return w.do("GET", "/v1/whoami", w.cast.Reader, nil) }, 200},
		{"get_manifest", nil, func(w *world, a []any) resp { return w.do("GET", "/v1/manifest", "", nil) }, 200},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			w, meter := benchWorld(b)
			// Some threads and claims for the listings to find.
			for i := 0; i < 60; i++ {
				th, _ := w.ask(w.cast.Carol, fmt.Sprintf("background %d", i))
				if i%3 == 0 {
					w.assert(w.cast.Bob, fmt.Sprintf("background claim %d", i), map[string]any{"thread": th})
				}
			}
			w.do("GET", "/v1/whoami", w.cast.Alice, nil) // warm the token cache for every caller
			for _, tok := range []string{w.cast.Bob, w.cast.Carol, w.cast.Mod, w.cast.Human, w.cast.Reader, w.cast.Verifier} {
				w.do("GET", "/v1/whoami", tok, nil)
			}
			var total testenv.Usage
			total.Calls = map[string]int{}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var args []any
				if bc.setup != nil {
					args = bc.setup(w, i)
				}
				meter.Take()
				b.StartTimer()
				start := time.Now()
				r := bc.run(w, args)
				d := time.Since(start)
				b.StopTimer()
				if r.status != bc.want {
					b.Fatalf("%s: %d %s", bc.name, r.status, r.raw)
				}
				u := meter.Take()
				lat = append(lat, d)
				total.WRU += u.WRU
				total.RRU += u.RRU
				total.InStore += u.InStore
				for k, v := range u.Calls {
					total.Calls[k] += v
				}
				b.StartTimer()
			}
			b.StopTimer()
			n := float64(b.N)
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			var handler time.Duration
			for _, d := range lat {
				handler += d
			}
			storeMs := float64(total.InStore.Microseconds()) / 1000 / n
			cpuMs := float64(handler.Microseconds())/1000/n - storeMs
			awsMs := cpuMs
			for op, c := range total.Calls {
				awsMs += float64(c) / n * float64(latencyOf[op].Milliseconds())
			}
			billedS := math.Ceil(awsMs) / 1000
			cost := priceHTTPAPI + priceLambdaReq + billedS*lambdaGB*priceGBSecond + total.WRU/n*priceWRU + total.RRU/n*priceRRU
			b.ReportMetric(float64(total.RoundTrips())/n, "RT/op")
			b.ReportMetric(total.WRU/n, "WRU/op")
			b.ReportMetric(total.RRU/n, "RRU/op")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(storeMs, "store-ms/op")
			b.ReportMetric(awsMs, "aws-est-ms")
			b.ReportMetric(cost*1e6, "$/M")
			calls := []string{}
			for op, c := range total.Calls {
				calls = append(calls, fmt.Sprintf("%s=%.2f", op, float64(c)/n))
			}
			sort.Strings(calls)
			b.Logf("%s: calls/op %v", bc.name, calls)
		})
	}
}

// BenchmarkRace32 runs 32 concurrent posts on one thread against the
// strict backend (moto_server, requests serialized: a commit takes it
// milliseconds, so contention is real) and reports per post the latency
// (p50, p99, max), the DynamoDB round trips and the transactions (commit
// attempts). Every post carries an idempotency key and is retried on
// unavailable, as a client would; every post must be stored once.
func BenchmarkRace32(b *testing.B) {
	const n = 32
	var lat []time.Duration
	var rts, txs float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		count := testenv.NewCounter()
		env := testenv.New(b, core.Options{}, count.Option())
		api, _ := httpapi.New(env.Service, env.Logger)
		srv := httptest.NewServer(api.Handler())
		w := &world{t: b, env: env, srv: srv, cast: env.Cast(b)}
		th, _ := w.ask(w.cast.Alice, "the contested thread")
		tokens := make([]string, n)
		for j := range tokens {
			tokens[j] = env.Token(b, fmt.Sprintf("ainotes:racer%d", j), "", "read", "write")
		}
		count.Take()
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		b.StartTimer()
		for j := range tokens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				began := time.Now()
				for try := 0; try < 5; try++ {
					r := w.do("POST", "/v1/messages", tokens[j], map[string]any{"kind": "inform", "thread": th, "body": fmt.Sprint("racer ", j)}, "Idempotency-Key", fmt.Sprint("race-", j))
					if r.status == 201 || r.status == 200 {
						break
					}
					if r.status != 503 {
						b.Errorf("racer %d: %s", j, r.raw)
						return
					}
				}
				mu.Lock()
				lat = append(lat, time.Since(began))
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		b.StopTimer()
		calls := count.Take()
		for op, c := range calls {
			rts += float64(c)
			if op == "TransactWriteItems" {
				txs += float64(c)
			}
		}
		if got := w.thread(th).num("message_count"); got != n+1 {
			b.Fatalf("%d messages for %d posts", got, n)
		}
		srv.Close()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	posts := float64(b.N * n)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(rts/posts, "RT/post")
	b.ReportMetric(txs/posts, "commits/post")
}
