package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/localdb"
	"github.com/ainotes/parley/infra/testenv"
)

// feedsSetup is one run of TestFeedsNeverSkip: the store's settle window
// (commit timeout + index lag), what the proxy does inside it (hold each
// commit up to hold, hide new index entries for lag), and the workload.
type feedsSetup struct {
	commit, indexLag time.Duration
	hold, lag        time.Duration
	writers          int           // goroutines running thread scripts
	minWrites        int           // the run goes on until this many writes were made
	pause            time.Duration // up to this between a writer's steps, mostly
	think            time.Duration // up to this, now and then, so that turns last
	run, poll        time.Duration
	// Below these the run proved too little to count (a vacuous pass).
	minEvents, minLate, minTurns int // minTurns: required turns over all inboxes
}

// TestFeedsNeverSkip: the instance events feed and the inbox, followed by
// their cursors while commits land late and out of order and index entries
// appear late (testenv.LagProxy), hand out every event and every turn
// (docs/protocol.md §6.3). Ground truth is exact: a thread's own events (a
// strongly consistent chain), and each thread's versions as the writers'
// responses reported them. A turn (thread, awaiting_version) must have
// reached an identity's poller when one of its polls was sent after the
// turn's commit returned plus the proxy's lag (so its index entry was
// visible) and answered before the commit that ended the turn was sent
// (so it was still the thread's turn); turns still current at the end are
// covered by the polls after the workload. The run also proves it tested
// something: the proxy reordered commits and hid index entries, and events
// were first handed out after later-stamped ones (a reader that moved its
// cursor to what it was handed would have skipped them). The window's one
// premise is that a commit lands within the commit timeout of its stamp;
// on a loaded machine one may land later (its caller gave up, the server
// applied it anyway), and a miss of what such a commit wrote is logged as
// excused, not failed.
func TestFeedsNeverSkip(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		name    string
		backend testenv.Backend
		s       feedsSetup
	}{
		{"embedded", testenv.Embedded, feedsSetup{
			commit: 800 * ms, indexLag: 700 * ms, hold: 200 * ms, lag: 500 * ms,
			writers: 32, minWrites: 200, pause: 30 * ms, think: 1000 * ms, run: 2500 * ms, poll: 100 * ms,
			minEvents: 60, minLate: 3, minTurns: 20,
		}},
		// moto serializes requests and copies the table per transaction:
		// fewer writers, a wider window.
		{"strict", testenv.Strict, feedsSetup{
			commit: 1000 * ms, indexLag: 800 * ms, hold: 300 * ms, lag: 600 * ms,
			writers: 12, minWrites: 70, pause: 30 * ms, think: 1000 * ms, run: 3000 * ms, poll: 150 * ms,
			minEvents: 30, minLate: 1, minTurns: 6,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runFeedsNeverSkip(t, tc.backend, tc.s) })
	}
}

// feedsWorld is the service on a store whose client goes through the lag
// proxy, behind the HTTP API.
type feedsWorld struct {
	proxy  *testenv.LagProxy
	store  *dynamo.Store
	svc    *core.Service
	srv    *httptest.Server
	client *http.Client
	secret map[string]string // name → token
	ident  map[string]string // name → identity
	keys   atomic.Int64
	bodies atomic.Int64
}

func newFeedsWorld(t *testing.T, b testenv.Backend, s feedsSetup, seed uint64) *feedsWorld {
	t.Helper()
	var backend string
	switch b {
	case testenv.Embedded:
		db, err := localdb.Start("")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		backend = db.URL
	case testenv.Strict:
		backend = testenv.SharedMoto(t).URL
	}
	f := &feedsWorld{secret: map[string]string{}, ident: map[string]string{}}
	f.proxy = testenv.StartLagProxy(t, backend, testenv.LagOptions{Hold: s.hold, Lag: s.lag, Seed: seed})
	ctx := context.Background()
	client, err := config.DynamoDB(ctx, f.proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("feeds-%d-%d", os.Getpid(), time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	f.store, err = dynamo.New(client, table, dynamo.Options{CommitTimeout: s.commit, IndexLag: s.indexLag})
	if err != nil {
		t.Fatal(err)
	}
	limits := core.ReferenceLimits()
	limits.PostsPerMinute = 0
	if f.svc, err = core.NewService(f.store, core.Options{Limits: limits}); err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(f.svc, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(api.Handler())
	t.Cleanup(f.srv.Close)
	f.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	r := f.svc.Realm() + ":"
	for _, p := range []struct {
		name, identity, label string
		rights                []string
	}{
		{"alice", r + "alice", "", []string{"read", "write"}},
		{"bob", r + "bob", "", []string{"read", "write"}},
		{"carol", r + "carol", "", []string{"read", "write"}},
		{"w1", r + "w1", "", []string{"read", "write"}},
		{"w2", r + "w2", "", []string{"read", "write"}},
		{"w3", r + "w3", "", []string{"read", "write"}},
		{"w4", r + "w4", "", []string{"read", "write"}},
		{"hot", r + "hot", "", []string{"read", "write"}},
		{"mod", r + "mod", "mod", []string{"read", "write", "lock"}},
		{"hana", "human:hana", "", nil},
		{"reader", r + "reader", "", []string{"read"}},
	} {
		secret, _, err := f.svc.CreateToken(ctx, core.TokenSpec{Identity: p.identity, Rights: p.rights, Label: p.label})
		if err != nil {
			t.Fatal(err)
		}
		f.secret[p.name], f.ident[p.name] = secret, p.identity
	}
	return f
}

// feedReply is one HTTP exchange, timed on the client.
type feedReply struct {
	status     int
	body       obj
	raw        string
	sent, recv time.Time
}

func (f *feedsWorld) call(method, path, who string, body any, headers ...string) (feedReply, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return feedReply{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		return feedReply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+f.secret[who])
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	out := feedReply{sent: time.Now()}
	res, err := f.client.Do(req)
	if err != nil {
		return out, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	out.recv = time.Now()
	if err != nil {
		return out, err
	}
	out.status, out.raw = res.StatusCode, string(raw)
	if err := json.Unmarshal(raw, &out.body); err != nil {
		return out, fmt.Errorf("%s %s: not a JSON object: %q", method, path, raw)
	}
	return out, nil
}

// feedVersion is one version of a thread as the write that made it reported.
type feedVersion struct {
	awv        int
	aw         map[string]any // nil: nobody awaited
	sent, recv time.Time
}

// feedLedger is what the writers did.
type feedLedger struct {
	mu        sync.Mutex
	versions  map[string]map[int]feedVersion
	uncertain map[string]string // thread → why its versions are not all known
	refused   map[string]int    // reason → count
	writes    int
}

func (l *feedLedger) record(r feedReply, st obj) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	id := st.str("id")
	if l.versions[id] == nil {
		l.versions[id] = map[int]feedVersion{}
	}
	aw, _ := st.get("awaiting").(map[string]any)
	l.versions[id][st.num("version")] = feedVersion{awv: st.num("awaiting_version"), aw: aw, sent: r.sent, recv: r.recv}
}

func (l *feedLedger) doubt(thread, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if thread != "" && l.uncertain[thread] == "" {
		l.uncertain[thread] = why
	}
}

func (l *feedLedger) refusal(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused[reason]++
}

// write sends a post (with an Idempotency-Key, retried on 503 as a client
// would) or a thread operation (retried on 503), records the thread's new
// version, and counts refusals. A write that was retried or replayed
// leaves its thread uncertain: a version may have landed unreported.
func (f *feedsWorld) write(l *feedLedger, who, path string, body map[string]any) (feedReply, bool, error) {
	post := path == "/v1/messages"
	var headers []string
	if post {
		headers = []string{"Idempotency-Key", fmt.Sprintf("feeds-%d", f.keys.Add(1))}
	}
	thread, _ := body["thread"].(string)
	if !post {
		thread = strings.Split(strings.TrimPrefix(path, "/v1/threads/"), "/")[0]
	}
	for attempt := 0; ; attempt++ {
		r, err := f.call("POST", path, who, body, headers...)
		if err != nil {
			return r, false, err
		}
		st := r.body
		if post {
			st = obj(jsonObject(r.body.get("thread")))
		}
		switch {
		case r.status == http.StatusServiceUnavailable && attempt < 30:
			l.doubt(thread, "a write answered 503")
			time.Sleep(20 * time.Millisecond)
			continue
		case r.status == http.StatusCreated || (r.status == http.StatusOK && !post):
			if attempt > 0 {
				l.doubt(st.str("id"), "a write answered 503")
			}
			l.record(r, st)
			return r, true, nil
		case r.status == http.StatusOK && post && r.body.get("replayed") == true:
			l.doubt(st.str("id"), "a post was replayed")
			return r, true, nil
		case r.status == http.StatusConflict:
			l.refusal(r.reason())
			return r, false, nil
		}
		return r, false, fmt.Errorf("%s by %s: %d %s", path, who, r.status, r.raw)
	}
}

func jsonObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func (r feedReply) reason() string { return r.body.str("error.reason") }

// feedItem is one item a poll handed out: an event (thread, seq) or an
// inbox turn (thread, awaiting_version).
type feedItem struct {
	thread string
	n      int
}

func (s feedItem) String() string { return fmt.Sprintf("%s@%d", s.thread, s.n) }

type feedPoll struct {
	sent, recv    time.Time
	since, cursor string // the positions inside the cursors sent and returned
	items         []feedItem
}

// cursorPosition reads the store position inside a feed cursor (a test may look
// inside; clients must not).
func cursorPosition(cursor string) string {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "?" + cursor
	}
	_, pos, _ := strings.Cut(string(raw), "|")
	return pos
}

const feedLimit = 200

// follow polls a feed every interval with the cursor each reply returns
// until stop is closed, then once more.
func (f *feedsWorld) follow(who, path, list, field string, interval time.Duration, stop <-chan struct{}) ([]feedPoll, error) {
	var polls []feedPoll
	cursor := ""
	for last := false; ; {
		select {
		case <-stop:
			last = true
		default:
		}
		q := url.Values{"limit": {fmt.Sprint(feedLimit)}}
		if cursor != "" {
			q.Set("since", cursor)
		}
		r, err := f.call("GET", path+"?"+q.Encode(), who, nil)
		if err != nil {
			return polls, err
		}
		if r.status != http.StatusOK {
			return polls, fmt.Errorf("%s as %s: %d %s", path, who, r.status, r.raw)
		}
		p := feedPoll{sent: r.sent, recv: r.recv, since: cursorPosition(cursor), cursor: cursorPosition(r.body.str("cursor"))}
		for _, it := range r.body.list(list) {
			o := obj(jsonObject(it))
			id := o.str("thread")
			if id == "" {
				id = o.str("id")
			}
			p.items = append(p.items, feedItem{id, o.num(field)})
		}
		polls = append(polls, p)
		cursor = r.body.str("cursor")
		if last {
			return polls, nil
		}
		time.Sleep(interval)
	}
}

// inboxKeeps reports whether an inbox without an extension shows awaiting aw to
// identity (core.Service.Inbox's rule).
func inboxKeeps(identity string, aw map[string]any) bool {
	if aw == nil {
		return false
	}
	a := obj(aw)
	switch a.str("scope") {
	case "party":
		return a.str("identity") == identity
	case "any":
		return !(a.str("except.identity") == identity && a.str("except.extension") == "")
	case "human":
		return strings.HasPrefix(identity, "human:")
	}
	return false
}

func runFeedsNeverSkip(t *testing.T, b testenv.Backend, s feedsSetup) {
	start := time.Now()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d; store: commit timeout %v, index lag %v; proxy: hold 0..%v, index lag %v", seed, s.commit, s.indexLag, s.hold, s.lag)
	f := newFeedsWorld(t, b, s, seed)
	settle := f.store.FeedSettle()
	if s.hold >= s.commit || s.lag >= s.indexLag {
		t.Fatalf("the proxy's delays must fit the settle window")
	}
	began := time.Now()
	t.Logf("setup %v", began.Sub(start).Round(time.Millisecond))
	led := &feedLedger{versions: map[string]map[int]feedVersion{}, uncertain: map[string]string{}, refused: map[string]int{}}

	// Pollers: the instance feed, and the inboxes of two agents and a human.
	stop := make(chan struct{})
	inboxOf := []string{"alice", "bob", "hana"}
	var pw sync.WaitGroup
	var eventPolls []feedPoll
	inboxPolls := make([][]feedPoll, len(inboxOf))
	perrs := make([]error, 1+len(inboxOf))
	pw.Add(1 + len(inboxOf))
	go func() {
		defer pw.Done()
		eventPolls, perrs[0] = f.follow("reader", "/v1/events", "events", "seq", s.poll, stop)
	}()
	for i, who := range inboxOf {
		go func() {
			defer pw.Done()
			inboxPolls[i], perrs[1+i] = f.follow(who, "/v1/inbox", "threads", "awaiting_version", s.poll, stop)
		}()
	}

	// Writers: each runs thread scripts for the run's time, and on (up to
	// three times as long) until minWrites writes were made, so that a
	// loaded machine still proves something; one more keeps answering
	// threads others are working on (contention, new turns).
	runEnd, hardEnd := began.Add(s.run), began.Add(3*s.run)
	going := func() bool {
		now := time.Now()
		if now.Before(runEnd) {
			return true
		}
		led.mu.Lock()
		defer led.mu.Unlock()
		return led.writes < s.minWrites && now.Before(hardEnd)
	}
	var threads sync.Map
	var ww sync.WaitGroup
	werrs := make([]error, s.writers+1)
	askers := []string{"alice", "bob", "carol"}
	responders := map[string][]string{"alice": {"bob", "w1", "w2"}, "bob": {"alice", "w1", "w3"}, "carol": {"alice", "bob", "w4"}}
	body := func(what string) string { return fmt.Sprintf("%s %d", what, f.bodies.Add(1)) }
	for g := range s.writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			pause := func() {
				d := s.pause
				if rng.IntN(3) == 0 {
					d = s.think
				}
				if going() {
					time.Sleep(time.Duration(rng.Int64N(int64(d) + 1)))
				}
			}
			post := func(who string, env map[string]any) (obj, bool) {
				if werrs[g] != nil || !going() {
					return nil, false
				}
				r, ok, err := f.write(led, who, "/v1/messages", env)
				if err != nil {
					werrs[g] = err
				}
				return r.body, ok
			}
			op := func(who, thread, what string, env map[string]any) {
				if werrs[g] == nil && going() {
					if _, _, err := f.write(led, who, "/v1/threads/"+thread+"/"+what, env); err != nil {
						werrs[g] = err
					}
				}
			}
			for i := 0; going() && werrs[g] == nil; i++ {
				a := askers[(g+i)%len(askers)]
				rs := responders[a]
				r := rs[rng.IntN(len(rs))]
				ask, ok := post(a, map[string]any{"kind": "ask", "body": body("question")})
				if !ok {
					continue
				}
				th := ask.str("thread.id")
				threads.Store(th, true)
				pause()
				ans, ok := post(r, map[string]any{"kind": "answer", "thread": th, "body": body("answer")})
				if !ok {
					continue
				}
				pause()
				switch rng.IntN(5) {
				case 0: // a asks back; r answers again: a's turn once more
					if c, ok := post(a, map[string]any{"kind": "clarify", "thread": th, "parent": ans.str("message.id"), "body": body("which?")}); ok {
						pause()
						post(r, map[string]any{"kind": "answer", "thread": th, "parent": c.str("message.id"), "body": body("this one")})
					}
				case 1: // a decides, the moderator confirms
					post(a, map[string]any{"kind": "decide", "thread": th, "parent": ans.str("message.id"), "body": body("decided")})
					pause()
					op("mod", th, "confirm", map[string]any{"state": "decided"})
				case 2: // r hands the turn to a human
					post(r, map[string]any{"kind": "escalate", "thread": th, "body": body("a human please")})
				case 3: // a marks decided, the moderator closes (confirmed: awaiting cleared)
					op(a, th, "mark", map[string]any{"state": "decided"})
					pause()
					op("mod", th, "mark", map[string]any{"state": "closed"})
				case 4: // a's turn stays
				}
				pause()
			}
		}()
	}
	ww.Add(1)
	go func() {
		defer ww.Done()
		rng := rand.New(rand.NewPCG(seed, 99))
		for going() && werrs[s.writers] == nil {
			var ids []string
			threads.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
			if len(ids) > 0 {
				sort.Strings(ids)
				th := ids[rng.IntN(len(ids))]
				if _, _, err := f.write(led, "hot", "/v1/messages", map[string]any{"kind": "answer", "thread": th, "body": body("another answer")}); err != nil {
					werrs[s.writers] = err
				}
			}
			time.Sleep(time.Duration(rng.Int64N(int64(s.pause)+1)) + s.pause)
		}
	}()
	ww.Wait()
	workEnd := time.Now()
	// Keep polling a bit more than the settle window: every entry stamped
	// during the workload is then behind every poller's bound.
	time.Sleep(settle + 3*s.poll + 200*time.Millisecond)
	close(stop)
	pw.Wait()
	polled := time.Now()
	for _, err := range append(werrs, perrs...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	stats := f.proxy.Stats()
	t.Logf("workload %v (%d writes, refused %v, %d threads uncertain), polled until %v after it; proxy: %d commits, %d out of stamp order, %d out of arrival order, hidden %v, longest stamp→landing %v, %d late landings, %d aborted",
		workEnd.Sub(began).Round(time.Millisecond), led.writes, led.refused, len(led.uncertain), time.Since(workEnd).Round(time.Millisecond),
		stats.Commits, stats.OutOfStampOrder, stats.OutOfArrivalOrder, stats.Hidden, stats.MaxLanding.Round(time.Millisecond), stats.LateLandings, stats.Aborted)
	if stats.LateLandings > 0 || stats.MaxLanding > s.commit {
		t.Logf("NB: a commit landed %v after its stamp, past the commit timeout %v (the machine is loaded?): the settle window's premise did not hold for it", stats.MaxLanding, s.commit)
	}

	// The proxy really did reorder and hide; the feeds never needed a second page.
	if stats.OutOfStampOrder == 0 || stats.OutOfArrivalOrder == 0 {
		t.Errorf("the proxy forwarded no commit out of order: %+v", stats)
	}
	if stats.Hidden[dynamo.IndexEvents] == 0 || stats.Hidden[dynamo.IndexAwaiting] == 0 {
		t.Errorf("the proxy hid no index entry of a feed: %v", stats.Hidden)
	}
	if stats.Paged[dynamo.IndexEvents]+stats.Paged[dynamo.IndexAwaiting] != 0 {
		t.Fatalf("feed queries came back paged (%v): the workload is too dense for this check's turn rule", stats.Paged)
	}

	// The order keys the store stamped, as the proxy saw them written, and
	// the commits that wrote them. A commit that landed later than the
	// commit timeout after its stamp (its caller had given up; the server
	// applied it all the same) is outside what the settle window promises:
	// a miss of what it wrote is logged, not failed.
	evKey, ibKey := map[feedItem]string{}, map[feedItem]string{}
	landedLate := map[feedItem]time.Duration{}
	for _, c := range f.proxy.Commits() {
		if !c.OK {
			continue
		}
		var lateBy time.Duration
		if c.Stamp != "" {
			var msec int64
			fmt.Sscan(c.Stamp[:13], &msec)
			if d := c.Completed.Sub(time.UnixMilli(msec)); d > s.commit {
				lateBy = d
			}
		}
		for _, it := range c.Puts {
			var n int
			if k := it["ev_sk"]; k != "" {
				fmt.Sscan(it["seq"], &n)
				evKey[feedItem{"th_" + it["th"], n}] = k
				if lateBy > 0 {
					landedLate[feedItem{"ev th_" + it["th"], n}] = lateBy
				}
			}
			if k := it["ib_sk"]; k != "" && it["sk"] == "t" {
				fmt.Sscan(it["awv"], &n)
				ibKey[feedItem{"th_" + it["id"], n}] = k
				if lateBy > 0 {
					landedLate[feedItem{"ib th_" + it["id"], n}] = lateBy
				}
			}
		}
	}
	excused := 0
	// miss reports something a poller never saw, unless its commit landed late.
	miss := func(kind string, id feedItem, format string, args ...any) {
		t.Helper()
		if d, ok := landedLate[feedItem{kind + " " + id.thread, id.n}]; ok {
			excused++
			t.Logf("excused (its commit landed %v after its stamp, past the commit timeout): "+format, append([]any{d.Round(time.Millisecond)}, args...)...)
			return
		}
		t.Errorf(format, args...)
	}

	// Ground truth, read after everything settled: every thread (the
	// writers' and the listing's must agree), its events and its state.
	known := map[string]bool{}
	threads.Range(func(k, _ any) bool { known[k.(string)] = true; return true })
	listed := map[string]obj{} // the threads as they are now (the items are read strongly consistent)
	for cursor := ""; ; {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r, err := f.call("GET", "/v1/threads?"+q.Encode(), "reader", nil)
		if err != nil || r.status != 200 {
			t.Fatalf("list threads: %v %s", err, r.raw)
		}
		for _, th := range r.body.list("threads") {
			listed[obj(jsonObject(th)).str("id")] = obj(jsonObject(th))
		}
		if cursor = r.body.str("cursor"); cursor == "" {
			break
		}
	}
	if len(listed) != len(known) {
		t.Errorf("list_threads shows %d threads, the writers opened %d", len(listed), len(known))
	}
	truth := map[feedItem]bool{}
	final := listed
	var mu sync.Mutex
	var rw sync.WaitGroup
	work := make(chan string)
	rerrs := make([]error, 8)
	for i := range rerrs {
		rw.Add(1)
		go func() {
			defer rw.Done()
			for id := range work {
				evs, err := f.call("GET", "/v1/events?thread="+id+"&limit=200", "reader", nil)
				if err == nil && evs.status != 200 {
					err = fmt.Errorf("events of %s: %s", id, evs.raw)
				}
				if err != nil {
					rerrs[i] = err
					continue
				}
				mu.Lock()
				for _, e := range evs.body.list("events") {
					truth[feedItem{id, obj(jsonObject(e)).num("seq")}] = true
				}
				mu.Unlock()
			}
		}()
	}
	for id := range listed {
		work <- id
	}
	close(work)
	rw.Wait()
	for _, err := range rerrs {
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Logf("ground truth read in %v", time.Since(polled).Round(time.Millisecond))

	// Events: every one reached the instance poller; each poll handed out
	// only entries after its cursor, in key order, and the cursor never
	// went back.
	seen := map[feedItem]bool{}
	late, maxHanded := 0, ""
	for i, p := range eventPolls {
		if p.cursor < p.since {
			t.Errorf("events poll %d: cursor went back from %s to %s", i, p.since, p.cursor)
		}
		if len(p.items) >= feedLimit {
			t.Fatalf("events poll %d handed out a full page: the workload is too dense for this check", i)
		}
		prev, top := p.since, ""
		for _, e := range p.items {
			k, ok := evKey[e]
			if !ok {
				t.Errorf("events poll %d: %v has no order key the proxy saw written", i, e)
				continue
			}
			if k <= prev {
				t.Errorf("events poll %d: %v (key %s) handed out at or before %s", i, e, k, prev)
			}
			if !seen[e] && k < maxHanded {
				late++ // a reader that moved its cursor to what it was handed would have skipped it
			}
			seen[e] = true
			prev, top = k, max(top, k)
		}
		maxHanded = max(maxHanded, top)
	}
	for e := range truth {
		if !seen[e] {
			miss("ev", e, "the events poller never saw event %v (key %s) of %d", e, evKey[e], len(truth))
		}
	}
	for e := range seen {
		if !truth[e] {
			t.Errorf("the events poller saw %v, which no thread has", e)
		}
	}
	t.Logf("events: %d in %d threads, %d of them seen over %d polls; %d first seen after a later-stamped one (the settle rule's work)", len(truth), len(listed), len(seen), len(eventPolls), late)
	if len(truth) < s.minEvents || late < s.minLate {
		t.Errorf("too little happened to prove anything: %d events (want ≥ %d), %d late (want ≥ %d)", len(truth), s.minEvents, late, s.minLate)
	}

	// Turns. Each certain thread's versions, from 1 to its final one, were
	// all reported; a turn runs from the version that set its
	// awaiting_version to the first that set another.
	type turn struct {
		id            feedItem
		aw            map[string]any
		setRecv, endS time.Time // endS zero: current at the end
	}
	var turns []turn
	certain := 0
	for id, th := range final {
		vs := led.versions[id]
		last := th.num("version")
		if led.uncertain[id] != "" {
			continue
		}
		complete := true
		for v := 1; v <= last; v++ {
			if _, ok := vs[v]; !ok {
				complete = false
			}
		}
		if !complete || len(vs) != last {
			t.Logf("%s: versions reported %d of %d (not counted for turns)", id, len(vs), last)
			continue
		}
		if fv := vs[last]; fv.awv != th.num("awaiting_version") {
			t.Errorf("%s: the last write reported awaiting_version %d, the thread has %d", id, fv.awv, th.num("awaiting_version"))
		}
		certain++
		for v := 1; v <= last; v++ {
			cur := vs[v]
			if v > 1 && cur.awv == vs[v-1].awv {
				continue
			}
			if cur.awv != v {
				t.Errorf("%s: version %d set awaiting_version %d", id, v, cur.awv)
			}
			tu := turn{id: feedItem{id, v}, aw: cur.aw, setRecv: cur.recv}
			for u := v + 1; u <= last; u++ {
				if vs[u].awv != v {
					tu.endS = vs[u].sent
					break
				}
			}
			turns = append(turns, tu)
		}
	}
	allRequired := 0
	for i, who := range inboxOf {
		identity := f.ident[who]
		polls := inboxPolls[i]
		got := map[feedItem]bool{}
		lateTurns, maxHanded := 0, ""
		for j, p := range polls {
			if p.cursor < p.since {
				t.Errorf("%s's inbox poll %d: cursor went back from %s to %s", who, j, p.since, p.cursor)
			}
			if len(p.items) >= feedLimit {
				t.Fatalf("%s's inbox poll %d handed out a full page: the workload is too dense for this check", who, j)
			}
			top := ""
			for _, it := range p.items {
				k := ibKey[it]
				if !got[it] && k != "" && k < maxHanded {
					lateTurns++
				}
				got[it] = true
				top = max(top, k)
			}
			maxHanded = max(maxHanded, top)
		}
		// Nothing handed out that was not a turn of this identity.
		for it := range got {
			vs := led.versions[it.thread]
			if v, ok := vs[it.n]; ok && v.awv == it.n && !inboxKeeps(identity, v.aw) {
				t.Errorf("%s's inbox handed out %v, a turn of %v", who, it, v.aw)
			}
		}
		// At the end: every thread that awaits this identity now was seen
		// with its current awaiting_version.
		atEnd := 0
		for id, th := range final {
			aw, _ := th.get("awaiting").(map[string]any)
			if !inboxKeeps(identity, aw) {
				continue
			}
			atEnd++
			if tid := (feedItem{id, th.num("awaiting_version")}); !got[tid] {
				miss("ib", tid, "%s's inbox never handed out %v (key %s), which awaits %v at the end", who, tid, ibKey[tid], aw)
			}
		}
		// During the run: every turn that was visible and still the
		// thread's turn during one of this poller's polls.
		required, short := 0, 0
		for _, tu := range turns {
			if !inboxKeeps(identity, tu.aw) {
				continue
			}
			covered := false
			for _, p := range polls {
				if !p.sent.Before(tu.setRecv.Add(s.lag+time.Millisecond)) && (tu.endS.IsZero() || !p.recv.After(tu.endS)) {
					covered = true
					break
				}
			}
			if !covered {
				short++
				continue
			}
			required++
			if !got[tu.id] {
				when := "current at the end"
				if !tu.endS.IsZero() {
					when = fmt.Sprintf("ended %v after it was set", tu.endS.Sub(tu.setRecv).Round(time.Millisecond))
				}
				miss("ib", tu.id, "%s's inbox never handed out turn %v (%v, %s, key %s)", who, tu.id, tu.aw, when, ibKey[tu.id])
			}
		}
		t.Logf("%s's inbox: %d polls, %d turns handed out, %d awaiting at the end, %d turns required (of %d certain threads), %d too short to require, %d first seen after a later-stamped one",
			who, len(polls), len(got), atEnd, required, certain, short, lateTurns)
		if required == 0 {
			t.Errorf("%s: no turn required: too little happened to prove anything", who)
		}
		allRequired += required
	}
	if allRequired < s.minTurns {
		t.Errorf("only %d turns required over all inboxes (want ≥ %d): too little happened to prove anything", allRequired, s.minTurns)
	}
	if excused > 0 {
		t.Logf("%d misses excused: their commits landed past the commit timeout", excused)
	}
}
