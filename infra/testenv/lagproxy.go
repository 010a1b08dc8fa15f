package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// LagOptions set how much a LagProxy delays and reorders.
type LagOptions struct {
	// Hold: each TransactWriteItems is held a random 0..Hold before it is
	// forwarded, so a commit stamped earlier can land after one stamped
	// later. Keep it below the store's commit timeout.
	Hold time.Duration
	// Lag: a Query on an index leaves out an item for Lag after the write
	// that gave it its current index key completed (and while such a write
	// is in flight). Keep it below the store's index lag.
	Lag time.Duration
	// Seed makes the holds reproducible; 0 picks one.
	Seed uint64
}

// LagProxy is a test-only HTTP proxy in front of a DynamoDB-compatible
// server (the DynamoDB JSON protocol: X-Amz-Target
// DynamoDB_20120810.<Op>) that plays what real DynamoDB may do and a local
// server never does: commits that land late and out of order, and global
// secondary index entries that appear some time after their write.
//
// Writes (PutItem, UpdateItem, DeleteItem, BatchWriteItem and each item of
// a TransactWriteItems) are recorded by table key; a Query on an index
// leaves out an item whose index key was set by a write that completed less
// than Lag ago or is still in flight. An entry whose key a later write left
// unchanged stays visible, as in DynamoDB. The page is refilled from the
// server to the request's Limit, so LastEvaluatedKey is the server's own
// and a reader paging on never skips a visible item; Count and
// ScannedCount count what is returned. Key schemas are read with
// DescribeTable.
type LagProxy struct {
	URL string

	backend string
	opts    LagOptions
	client  *http.Client
	srv     *httptest.Server

	mu       sync.Mutex
	rng      *rand.Rand
	schemas  map[string]*tableSchema
	entries  map[string]map[string]indexEntry // table key → index → entry
	pending  map[string][]*pendingWrite       // table key → writes in flight
	arrivals int
	maxArr   int    // the latest arrival forwarded so far
	maxStamp string // the latest stamp (ms) forwarded so far
	stats    LagStats
	commits  []LandedCommit
}

// LagStats is what a LagProxy did.
type LagStats struct {
	Commits           int // TransactWriteItems forwarded
	OutOfArrivalOrder int // forwarded after one that arrived later
	OutOfStampOrder   int // forwarded after one stamped in a later millisecond
	Aborted           int // callers that gave up during the hold (never forwarded)
	LateLandings      int // commits that completed after their caller gave up
	// MaxLanding is the longest time from a commit's stamp (the millisecond
	// of the order keys it creates) to its completion.
	MaxLanding time.Duration
	// Hidden counts index items left out of Query responses, by index.
	Hidden map[string]int
	// Paged counts index Queries answered with a LastEvaluatedKey, by index.
	Paged map[string]int
	// Queries counts index Queries, by index.
	Queries map[string]int
}

// LandedCommit is one TransactWriteItems the proxy forwarded.
type LandedCommit struct {
	Arrived, Forwarded, Completed time.Time
	OK                            bool
	// Stamp is the smallest order key (a value starting with 13 digits and
	// '#') among the index keys the commit set anew; "" when it set none.
	Stamp string
	// Puts holds the string and number attributes of each Put item.
	Puts []map[string]string
}

type tableSchema struct {
	hash, rng string
	indexes   map[string][2]string // index → hash, range attribute ("" when none)
}

type indexEntry struct {
	value string // the index key the item has ("*": some key, unknown)
	since time.Time
}

type pendingWrite struct {
	idx map[string]string // index → the key the write gives the item ("" none, "*" unknown)
	// fresh: the index keys this write sets anew (neither the item's
	// recorded key nor one an earlier write in flight sets): hidden while
	// it is in flight. A write that keeps a key hides nothing.
	fresh map[string]string
}

// av is one attribute value of the JSON protocol, as far as keys go.
type av struct {
	S *string `json:"S"`
	N *string `json:"N"`
	B *string `json:"B"`
}

func (a av) key() string {
	switch {
	case a.S != nil:
		return "S:" + *a.S
	case a.N != nil:
		return "N:" + *a.N
	case a.B != nil:
		return "B:" + *a.B
	}
	return ""
}

type rawItem = map[string]json.RawMessage

func attrKey(it rawItem, name string) string {
	raw, ok := it[name]
	if !ok || name == "" {
		return ""
	}
	var a av
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	return a.key()
}

var (
	orderKeyValue = regexp.MustCompile(`^S:([0-9]{13})#`)
	exprWord      = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// StartLagProxy starts a proxy in front of backend (an http:// URL) that
// stops when the test ends.
func StartLagProxy(t testing.TB, backend string, o LagOptions) *LagProxy {
	t.Helper()
	seed := o.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	p := &LagProxy{
		backend: strings.TrimRight(backend, "/"), opts: o,
		client:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		schemas: map[string]*tableSchema{}, entries: map[string]map[string]indexEntry{}, pending: map[string][]*pendingWrite{},
		stats: LagStats{Hidden: map[string]int{}, Paged: map[string]int{}, Queries: map[string]int{}},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

// Stats returns a copy of what the proxy did so far.
func (p *LagProxy) Stats() LagStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Hidden, s.Paged, s.Queries = copyCounts(p.stats.Hidden), copyCounts(p.stats.Paged), copyCounts(p.stats.Queries)
	return s
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Commits returns the transactions forwarded so far, in forwarding order.
func (p *LagProxy) Commits() []LandedCommit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]LandedCommit(nil), p.commits...)
}

func (p *LagProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	switch op {
	case "TransactWriteItems":
		p.transact(w, r, body)
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem":
		p.write(w, r, body, op)
	case "Query":
		p.query(w, r, body)
	default:
		res, out, err := p.forward(r.Context(), r, body)
		p.relay(w, res, out, err)
	}
}

// forward sends one request to the server and reads its whole answer.
func (p *LagProxy) forward(ctx context.Context, r *http.Request, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, p.backend+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Connection", "Accept-Encoding":
			continue
		}
		req.Header[k] = vs
	}
	res, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res, out, err
}

// relay writes the server's answer (body possibly rewritten) to the client.
func (p *LagProxy) relay(w http.ResponseWriter, res *http.Response, body []byte, err error) {
	if err != nil {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":%q}`, "lag proxy: "+err.Error())
		return
	}
	for k, vs := range res.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Transfer-Encoding", "Content-Encoding":
			continue
		}
		w.Header()[k] = vs
	}
	if w.Header().Get("X-Amz-Crc32") != "" {
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(body)
}

// schema returns a table's key schema, read once with DescribeTable.
func (p *LagProxy) schema(r *http.Request, table string) *tableSchema {
	p.mu.Lock()
	s := p.schemas[table]
	p.mu.Unlock()
	if s != nil || table == "" {
		return s
	}
	req := r.Clone(r.Context())
	req.Header = r.Header.Clone()
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.DescribeTable")
	body, _ := json.Marshal(map[string]string{"TableName": table})
	res, out, err := p.forward(r.Context(), req, body)
	if err != nil || res.StatusCode != http.StatusOK {
		return nil
	}
	type keyElem struct{ AttributeName, KeyType string }
	var desc struct {
		Table struct {
			KeySchema              []keyElem
			GlobalSecondaryIndexes []struct {
				IndexName string
				KeySchema []keyElem
			}
		}
	}
	if json.Unmarshal(out, &desc) != nil {
		return nil
	}
	split := func(ks []keyElem) [2]string {
		var k [2]string
		for _, e := range ks {
			if e.KeyType == "HASH" {
				k[0] = e.AttributeName
			} else {
				k[1] = e.AttributeName
			}
		}
		return k
	}
	tk := split(desc.Table.KeySchema)
	s = &tableSchema{hash: tk[0], rng: tk[1], indexes: map[string][2]string{}}
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		s.indexes[g.IndexName] = split(g.KeySchema)
	}
	p.mu.Lock()
	p.schemas[table] = s
	p.mu.Unlock()
	return s
}

func (s *tableSchema) tableKey(table string, it rawItem) string {
	return table + "\x00" + attrKey(it, s.hash) + "\x00" + attrKey(it, s.rng)
}

// indexKey is the item's key in an index, "" when it is not in it.
func indexKey(k [2]string, it rawItem) string {
	h := attrKey(it, k[0])
	if h == "" {
		return ""
	}
	rk := ""
	if k[1] != "" {
		if rk = attrKey(it, k[1]); rk == "" {
			return ""
		}
	}
	return h + "\x00" + rk
}

// change is one item write: its table key and the index keys it sets.
type change struct {
	key string
	pw  *pendingWrite
}

// putChange: a whole item; every index key follows from it.
func (s *tableSchema) putChange(table string, it rawItem) change {
	pw := &pendingWrite{idx: map[string]string{}}
	for name, k := range s.indexes {
		pw.idx[name] = indexKey(k, it)
	}
	return change{key: s.tableKey(table, it), pw: pw}
}

// updateChange: an update expression; an index whose key attribute it
// names gets an unknown key, the others stay as they are.
func (s *tableSchema) updateChange(table string, key rawItem, expr string, names map[string]string) change {
	for alias, name := range names {
		expr = strings.ReplaceAll(expr, alias, name)
	}
	words := map[string]bool{}
	for _, w := range exprWord.FindAllString(expr, -1) {
		words[w] = true
	}
	pw := &pendingWrite{idx: map[string]string{}}
	for name, k := range s.indexes {
		if words[k[0]] || (k[1] != "" && words[k[1]]) {
			pw.idx[name] = "*"
		}
	}
	return change{key: s.tableKey(table, key), pw: pw}
}

// deleteChange: the item leaves every index.
func (s *tableSchema) deleteChange(table string, key rawItem) change {
	pw := &pendingWrite{idx: map[string]string{}}
	for name := range s.indexes {
		pw.idx[name] = ""
	}
	return change{key: s.tableKey(table, key), pw: pw}
}

// begin registers writes in flight; their new index keys are hidden until
// they complete and Lag has passed. It returns the smallest order key among
// the index keys set anew.
func (p *LagProxy) begin(chs []change) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	stamp := ""
	for _, c := range chs {
		c.pw.fresh = map[string]string{}
	values:
		for name, v := range c.pw.idx {
			if v == "" || (v != "*" && p.entries[c.key][name].value == v) {
				continue
			}
			for _, other := range p.pending[c.key] {
				if v != "*" && other.idx[name] == v {
					continue values
				}
			}
			c.pw.fresh[name] = v
			_, rk, _ := strings.Cut(v, "\x00")
			if orderKeyValue.MatchString(rk) && (stamp == "" || rk < stamp) {
				stamp = rk
			}
		}
		p.pending[c.key] = append(p.pending[c.key], c.pw)
	}
	return strings.TrimPrefix(stamp, "S:")
}

// end records how writes in flight ended.
func (p *LagProxy) end(chs []change, ok bool, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range chs {
		list := p.pending[c.key]
		for i, pw := range list {
			if pw == c.pw {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(p.pending, c.key)
		} else {
			p.pending[c.key] = list
		}
		if !ok {
			continue
		}
		cur := p.entries[c.key]
		if cur == nil {
			cur = map[string]indexEntry{}
			p.entries[c.key] = cur
		}
		for name, v := range c.pw.idx {
			switch {
			case v == "":
				delete(cur, name)
			case v == "*" || cur[name].value != v:
				cur[name] = indexEntry{value: v, since: at}
			}
		}
	}
}

// hidden reports whether an index item returned by the server is not to be
// shown yet. Called with p.mu held.
func (p *LagProxy) hidden(s *tableSchema, table, index string, it rawItem, now time.Time) bool {
	tk := s.tableKey(table, it)
	v := indexKey(s.indexes[index], it)
	for _, pw := range p.pending[tk] {
		if w, ok := pw.fresh[index]; ok && (w == v || w == "*") {
			return true
		}
	}
	e, ok := p.entries[tk][index]
	return ok && (e.value == v || e.value == "*") && now.Before(e.since.Add(p.opts.Lag))
}

// transact holds a TransactWriteItems for a random while, forwards it and
// records its writes.
func (p *LagProxy) transact(w http.ResponseWriter, r *http.Request, body []byte) {
	arrived := time.Now()
	p.mu.Lock()
	p.arrivals++
	arrival := p.arrivals
	hold := time.Duration(0)
	if p.opts.Hold > 0 {
		hold = time.Duration(p.rng.Int64N(int64(p.opts.Hold) + 1))
	}
	p.mu.Unlock()

	var in struct {
		TransactItems []struct {
			Put *struct {
				TableName string
				Item      rawItem
			}
			Update *struct {
				TableName                string
				Key                      rawItem
				UpdateExpression         string
				ExpressionAttributeNames map[string]string
			}
			Delete *struct {
				TableName string
				Key       rawItem
			}
		}
	}
	var chs []change
	var puts []map[string]string
	if json.Unmarshal(body, &in) == nil {
		for _, ti := range in.TransactItems {
			switch {
			case ti.Put != nil:
				if s := p.schema(r, ti.Put.TableName); s != nil {
					chs = append(chs, s.putChange(ti.Put.TableName, ti.Put.Item))
				}
				puts = append(puts, scalars(ti.Put.Item))
			case ti.Update != nil:
				if s := p.schema(r, ti.Update.TableName); s != nil {
					chs = append(chs, s.updateChange(ti.Update.TableName, ti.Update.Key, ti.Update.UpdateExpression, ti.Update.ExpressionAttributeNames))
				}
			case ti.Delete != nil:
				if s := p.schema(r, ti.Delete.TableName); s != nil {
					chs = append(chs, s.deleteChange(ti.Delete.TableName, ti.Delete.Key))
				}
			}
		}
	}

	select {
	case <-time.After(hold):
	case <-r.Context().Done():
		p.mu.Lock()
		p.stats.Aborted++
		p.mu.Unlock()
		return
	}

	stamp := p.begin(chs)
	forwarded := time.Now()
	p.mu.Lock()
	p.stats.Commits++
	if arrival < p.maxArr {
		p.stats.OutOfArrivalOrder++
	}
	p.maxArr = max(p.maxArr, arrival)
	if stamp != "" {
		if stamp[:13] < p.maxStamp {
			p.stats.OutOfStampOrder++
		}
		p.maxStamp = max(p.maxStamp, stamp[:13])
	}
	p.mu.Unlock()

	// Once forwarded, the commit runs to its end even if the caller gives
	// up: the server may apply it all the same.
	res, out, err := p.forward(context.WithoutCancel(r.Context()), r, body)
	done := time.Now()
	ok := err == nil && res.StatusCode == http.StatusOK
	p.end(chs, ok, done)
	p.mu.Lock()
	if ok && r.Context().Err() != nil {
		p.stats.LateLandings++
	}
	if ok && stamp != "" {
		if ms, err := strconv.ParseInt(stamp[:13], 10, 64); err == nil {
			p.stats.MaxLanding = max(p.stats.MaxLanding, done.Sub(time.UnixMilli(ms)))
		}
	}
	p.commits = append(p.commits, LandedCommit{Arrived: arrived, Forwarded: forwarded, Completed: done, OK: ok, Stamp: stamp, Puts: puts})
	p.mu.Unlock()
	p.relay(w, res, out, err)
}

// scalars keeps an item's string and number attributes.
func scalars(it rawItem) map[string]string {
	out := map[string]string{}
	for k, raw := range it {
		var a av
		if json.Unmarshal(raw, &a) != nil {
			continue
		}
		switch {
		case a.S != nil:
			out[k] = *a.S
		case a.N != nil:
			out[k] = *a.N
		}
	}
	return out
}

// write forwards a single-item write (or a batch) and records it.
func (p *LagProxy) write(w http.ResponseWriter, r *http.Request, body []byte, op string) {
	var in struct {
		TableName                string
		Item                     rawItem
		Key                      rawItem
		UpdateExpression         string
		ExpressionAttributeNames map[string]string
		RequestItems             map[string][]struct {
			PutRequest    *struct{ Item rawItem }
			DeleteRequest *struct{ Key rawItem }
		}
	}
	var chs []change
	if json.Unmarshal(body, &in) == nil {
		if s := p.schema(r, in.TableName); s != nil {
			switch op {
			case "PutItem":
				chs = append(chs, s.putChange(in.TableName, in.Item))
			case "UpdateItem":
				chs = append(chs, s.updateChange(in.TableName, in.Key, in.UpdateExpression, in.ExpressionAttributeNames))
			case "DeleteItem":
				chs = append(chs, s.deleteChange(in.TableName, in.Key))
			}
		}
		for table, reqs := range in.RequestItems {
			s := p.schema(r, table)
			if s == nil {
				continue
			}
			for _, rq := range reqs {
				switch {
				case rq.PutRequest != nil:
					chs = append(chs, s.putChange(table, rq.PutRequest.Item))
				case rq.DeleteRequest != nil:
					chs = append(chs, s.deleteChange(table, rq.DeleteRequest.Key))
				}
			}
		}
	}
	p.begin(chs)
	res, out, err := p.forward(context.WithoutCancel(r.Context()), r, body)
	// A batch may leave items unprocessed; counting them as written only
	// hides them a little longer.
	p.end(chs, err == nil && res.StatusCode == http.StatusOK, time.Now())
	p.relay(w, res, out, err)
}

// query forwards a Query; on an index it leaves out the items not visible
// yet and refills the page from the server up to the request's Limit.
func (p *LagProxy) query(w http.ResponseWriter, r *http.Request, body []byte) {
	var req map[string]json.RawMessage
	var in struct {
		TableName, IndexName, Select string
		Limit                        int
	}
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &in) != nil || in.IndexName == "" || in.Select == "COUNT" {
		res, out, err := p.forward(r.Context(), r, body)
		p.relay(w, res, out, err)
		return
	}
	s := p.schema(r, in.TableName)
	if s == nil {
		res, out, err := p.forward(r.Context(), r, body)
		p.relay(w, res, out, err)
		return
	}
	var kept []rawItem
	var top map[string]json.RawMessage
	var res *http.Response
	scanned := 0
	for page := 0; ; page++ {
		var out []byte
		var err error
		res, out, err = p.forward(r.Context(), r, body)
		if err != nil || res.StatusCode != http.StatusOK {
			p.relay(w, res, out, err)
			return
		}
		var got struct {
			Items            []rawItem
			ScannedCount     int
			LastEvaluatedKey json.RawMessage
		}
		if json.Unmarshal(out, &top) != nil || json.Unmarshal(out, &got) != nil {
			p.relay(w, res, out, nil)
			return
		}
		now := time.Now()
		p.mu.Lock()
		hid := 0
		for _, it := range got.Items {
			if p.hidden(s, in.TableName, in.IndexName, it, now) {
				hid++
				continue
			}
			kept = append(kept, it)
		}
		p.stats.Hidden[in.IndexName] += hid
		p.mu.Unlock()
		scanned += got.ScannedCount - hid
		more := len(got.LastEvaluatedKey) > 0 && string(got.LastEvaluatedKey) != "null"
		if !more || in.Limit == 0 || len(kept) >= in.Limit || page == 100 {
			break
		}
		// Refill: the next page, for what the hidden items left free.
		req["ExclusiveStartKey"] = got.LastEvaluatedKey
		req["Limit"] = json.RawMessage(strconv.Itoa(in.Limit - len(kept)))
		body, _ = json.Marshal(req)
	}
	if kept == nil {
		kept = []rawItem{}
	}
	top["Items"], _ = json.Marshal(kept)
	top["Count"] = json.RawMessage(strconv.Itoa(len(kept)))
	top["ScannedCount"] = json.RawMessage(strconv.Itoa(max(scanned, len(kept))))
	p.mu.Lock()
	p.stats.Queries[in.IndexName]++
	if lek, ok := top["LastEvaluatedKey"]; ok && len(lek) > 0 && string(lek) != "null" {
		p.stats.Paged[in.IndexName]++
	}
	p.mu.Unlock()
	out, _ := json.Marshal(top)
	p.relay(w, res, out, nil)
}
