package push_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/instance"
	"github.com/ainotes/parley/infra/push"
	"github.com/ainotes/parley/infra/testenv"
)

// BenchmarkPostWithPush: what webhooks do to posting. The same post (an
// open question: every subscriber's turn) with no subscription, with 10
// subscriptions to a receiver that never answers (each attempt hangs
// until the 10 s timeout), and with 10 to a receiver that answers at
// once. Delivery runs off the request path, on its own DynamoDB client, so
// the meter sees the post's requests only: its WRU and round trips must
// not change with subscriptions, and its latency must not follow the
// receivers'. Figures: docs/performance.md.
func BenchmarkPostWithPush(b *testing.B) {
	dead, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		b.Fatal(err)
	}
	defer dead.Close()
	var deadHits atomic.Int64
	go func() {
		for {
			c, err := dead.Accept()
			deadHits.Add(1)
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	var healthyHits atomic.Int64
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { healthyHits.Add(1) }))
	defer healthy.Close()

	for _, bc := range []struct {
		name string
		url  string
		subs int
	}{
		{"no_subscriptions", "", 0},
		{"10_dead_receivers", "http://" + dead.Addr().String() + "/hook", 10},
		{"10_healthy_receivers", healthy.URL + "/hook", 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			meter := testenv.NewMeter(dynamo.TableInput("parley"))
			lim := core.ReferenceLimits()
			lim.PostsPerMinute, lim.Exchange, lim.DuplicateBody = math.MaxInt32, 0, false
			policy := core.PushPolicy{Key: key, Local: true}
			var runner atomic.Pointer[push.Runner]
			env := testenv.On(b, testenv.Embedded, core.Options{Limits: lim, TokenCacheTTL: time.Minute, Push: policy,
				Committed: func(prev *core.Thread, c core.Commit) {
					if r := runner.Load(); r != nil {
						r.Observe(prev, c)
					}
				}}, meter.Option())
			// The deliverer's own service and client on the same table: not metered.
			other, err := instance.Open(context.Background(), instance.Config{DynamoDB: env.URL, Table: env.Table, Service: core.Options{Push: policy}})
			if err != nil {
				b.Fatal(err)
			}
			d, err := push.NewDeliverer(other.Service, env.Logger)
			if err != nil {
				b.Fatal(err)
			}
			r := push.NewRunner(d)
			runner.Store(r)
			ctx, cancel := context.WithCancel(context.Background())
			r.Run(ctx, 4)
			defer func() { cancel(); r.Wait() }()

			cast := env.Cast(b)
			ctxb := context.Background()
			alice, _ := env.Service.Authenticate(ctxb, cast.Alice)
			for i := 0; i < bc.subs; i++ {
				c, _ := env.Service.Authenticate(ctxb, []string{cast.Bob, cast.Carol, cast.Mod}[i%3])
				if _, err := env.Service.Subscribe(ctxb, c, core.SubscribeInput{URL: bc.url, Events: []string{core.PushTurn, core.PushMessage}}); err != nil {
					b.Fatal(err)
				}
			}
			var wru float64
			var trips int
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				meter.Take()
				start := time.Now()
				if _, err := env.Service.PostJSON(ctxb, alice, fmt.Appendf(nil, `{"kind":"ask","body":"question %d for anyone"}`, i)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				u := meter.Take()
				wru += u.WRU
				trips += u.RoundTrips()
			}
			b.StopTimer()
			// The receivers were called meanwhile (else this measured nothing).
			hits := map[string]*atomic.Int64{"10_dead_receivers": &deadHits, "10_healthy_receivers": &healthyHits}[bc.name]
			for deadline := time.Now().Add(20 * time.Second); hits != nil && hits.Load() == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatal("no delivery was attempted")
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			n := float64(b.N)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
			b.ReportMetric(wru/n, "WRU/post")
			b.ReportMetric(float64(trips)/n, "RT/post")
		})
	}
}
