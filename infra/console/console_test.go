package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/console"
	"github.com/ainotes/parley/infra/httpapi"
	"github.com/ainotes/parley/infra/testenv"
)

// --- headers and assets, without a browser ---

func TestIndexAndAssetHeaders(t *testing.T) {
	mux := http.NewServeMux()
	console.Mount(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "api", http.StatusTeapot) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, body := get(t, srv.URL+"/", nil)
	if res.StatusCode != 200 {
		t.Fatalf("GET / = %d", res.StatusCode)
	}
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-cache",
		"Content-Type":            "text/html; charset=utf-8",
	}
	for k, v := range want {
		if got := res.Header.Get(k); got != v {
			t.Errorf("index %s = %q, want %q", k, got, v)
		}
	}
	// No inline script or style: every <script> has a src and no body, and
	// no element carries a style attribute or a <style> block.
	html := string(body)
	for _, m := range regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(html, -1) {
		if !strings.Contains(m[1], `src="/ui/`) || strings.TrimSpace(m[2]) != "" {
			t.Errorf("inline script in index.html: %s", m[0])
		}
	}
	if regexp.MustCompile(`(?i)<style|\sstyle=|\son[a-z]+=|javascript:`).MatchString(html) {
		t.Errorf("index.html has inline style or handlers")
	}
	// Every asset the page refers to is under the current version, immutable.
	refs := regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) < 3 {
		t.Fatalf("index refers to %d assets: %s", len(refs), html)
	}
	for _, r := range refs {
		if !strings.HasPrefix(r[1], "/ui/"+console.Version()+"/") {
			t.Errorf("asset %s is not under the version %s", r[1], console.Version())
		}
		res, _ := get(t, srv.URL+r[1], nil)
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Cache-Control"), "immutable") || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s = %d, Cache-Control %q", r[1], res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
	ver := "/ui/" + console.Version()
	for path, ctype := range map[string]string{ver + "/app.js": "text/javascript", ver + "/views/thread.js": "text/javascript", ver + "/app.css": "text/css"} {
		res, _ := get(t, srv.URL+path, nil)
		if !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) {
			t.Errorf("%s Content-Type %q, want %s", path, res.Header.Get("Content-Type"), ctype)
		}
	}
	// An older version is still served, but not cached for long.
	if res, _ := get(t, srv.URL+"/ui/0123456789ab/app.js", nil); res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("old version: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	for _, path := range []string{ver + "/nope.js", ver + "/", "/ui/app.js", "/ui/"} {
		if res, _ := get(t, srv.URL+path, nil); res.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", path, res.StatusCode)
		}
	}
	// The index revalidates with its ETag.
	if res, _ := get(t, srv.URL+"/", map[string]string{"If-None-Match": res.Header.Get("ETag")}); res.StatusCode != http.StatusNotModified {
		t.Errorf("conditional GET / = %d, want 304", res.StatusCode)
	}
	// Everything else stays with the API's mux.
	if res, _ := get(t, srv.URL+"/v1/whoami", nil); res.StatusCode != http.StatusTeapot {
		t.Errorf("the console took /v1/whoami: %d", res.StatusCode)
	}
	if res, _ := get(t, srv.URL+"/index.html", nil); res.StatusCode != http.StatusTeapot {
		t.Errorf("the console took /index.html: %d", res.StatusCode)
	}
	// Handler serves the same routes on its own.
	h := httptest.NewServer(console.Handler())
	defer h.Close()
	if res, _ := get(t, h.URL+"/", nil); res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") != console.CSP {
		t.Errorf("Handler: GET / = %d", res.StatusCode)
	}
}

// TestAssetsRenderServerDataAsText guards the rules the console keeps: no
// HTML parsing of data, no code from strings, no other origin, no storage
// but sessionStorage.
func TestAssetsRenderServerDataAsText(t *testing.T) {
	forbidden := []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "localStorage", "document.cookie", "http://", "https://", "//cdn", "setAttribute(\"style", ".style."}
	var files int
	err := filepath.WalkDir("static", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		files++
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, f := range forbidden {
			if bytes.Contains(raw, []byte(f)) {
				t.Errorf("%s contains %q", p, f)
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^import .* from "([^"]+)";`).FindAllSubmatch(raw, -1) {
			if !bytes.HasPrefix(m[1], []byte("./")) && !bytes.HasPrefix(m[1], []byte("../")) {
				t.Errorf("%s imports %s: only relative modules", p, m[1])
			}
		}
		return nil
	})
	if err != nil || files < 5 {
		t.Fatalf("walk: %v (%d files)", err, files)
	}
}

func get(t *testing.T, url string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

// --- the console in a real Chromium ---

const stepTimeout = 60 * time.Second

// TestConsoleInBrowser drives the console through Chromium against the real
// API on the tests' DynamoDB backend (testenv.New): the queue, confirm,
// mark, reopen, a human decide, a refusal, a read-only token, and a token
// minted in the console and used from Go.
func TestConsoleInBrowser(t *testing.T) {
	chrome := chromiumPath(t)
	outDir := testOutput(t)

	env := testenv.New(t, core.Options{})
	api, err := httpapi.New(env.Service, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	mux := api.Handler()
	console.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := &client{t: t, base: srv.URL}

	human := env.Token(t, "human:hana", "")
	alice := env.Token(t, "ainotes:alice", "", "read", "write")
	bob := env.Token(t, "ainotes:bob", "", "read", "write")
	reader := env.Token(t, "ainotes:reader", "", "read")

	// Seed: th1 — a discussion an agent escalates to a human.
	root := c.post(alice, map[string]any{"kind": "ask", "body": "Which storage engine should the 1.0 release ship with?"})
	th1 := root.str("thread.id")
	ans := c.post(bob, map[string]any{"kind": "answer", "thread": th1, "body": "DynamoDB, single table: conditional writes give us the state machine for free.",
		"provenance": map[string]any{"model": "claude-sonnet", "client": "parley-agent"}})
	objection := c.post(alice, map[string]any{"kind": "object", "thread": th1, "parent": ans.str("message.id"), "body": "On-demand pricing worries me for the benchmark workload."})
	c.post(bob, map[string]any{"kind": "inform", "thread": th1, "body": "Cost figures for 10k threads a day are in docs/performance.md."})
	esc := c.post(bob, map[string]any{"kind": "escalate", "thread": th1, "parent": objection.str("message.id"), "body": "We disagree on cost; a human should decide."})
	escID := esc.str("message.id")
	// th2 — its creator (an agent) marks it decided: a proposal.
	th2 := c.post(bob, map[string]any{"kind": "ask", "body": "Can we drop the v0 endpoints before 1.0?"}).str("thread.id")
	c.post(alice, map[string]any{"kind": "answer", "thread": th2, "body": "Yes: no client called them in 90 days. <script>alert(1)</script><img src=x onerror=alert(2)>"})
	if st, m := c.do(bob, "POST", "/v1/threads/"+th2+"/mark", map[string]any{"state": "decided"}); st != 200 || m.str("state") != "decided" || m.get("proposal") != true {
		t.Fatalf("bob marks his thread decided: %d %v", st, m)
	}
	// th3 — a claim with evidence: one https link, one pointer that must stay text.
	claim := c.post(alice, map[string]any{"kind": "assert", "body": "The p99 regression comes from the new JSON encoder.",
		"evidence": []map[string]any{{"kind": "url", "ref": "https://example.org/bench/run-41", "note": "benchmark"}, {"kind": "other", "ref": "javascript:alert(1)"}}})
	clID := claim.str("claim.id")
	c.post(bob, map[string]any{"kind": "attest", "claim": clID, "body": "Reproduced on arm64.", "evidence": []map[string]any{{"kind": "reproducer", "ref": "make bench-encoder"}}})

	b := newBrowser(t, chrome)

	signedIn := t.Run("sign in", func(t *testing.T) {
		b.must(t, "open the console", chromedp.Navigate(srv.URL+"/"), b.wait(`document.getElementById("signin-token")`))
		// A wrong token is refused in place, with its reason.
		b.must(t, "a bad token", chromedp.SendKeys(chromedp.ID("signin-token"), "pt_not-a-token\r"), b.waitText("#signin-status .refusal-reason", "unauthenticated"))
		b.signIn(t, human, "human:hana")
		where := b.eval(t, `JSON.stringify({href: location.href, cookie: document.cookie, stored: sessionStorage.getItem("parley.token")})`)
		var got struct{ Href, Cookie, Stored string }
		_ = json.Unmarshal([]byte(where), &got)
		if strings.Contains(got.Href, human) || got.Cookie != "" || got.Stored != human {
			t.Errorf("the token must live in sessionStorage only: %s", where)
		}
	})
	if !signedIn {
		t.Fatal("cannot sign in; the rest of the scenario needs it")
	}

	t.Run("queue shows the escalation and the proposal, live", func(t *testing.T) {
		defer b.screenshot(t, filepath.Join(outDir, "console-queue.png"), 0)
		b.navigate(t, "#/queue", "queue")
		item := func(th, why string) string {
			return fmt.Sprintf(`#queue-list li.queue-item[data-thread=%q] .why.why-%s`, th, why)
		}
		if !b.do(t, "the queue lists th1 as escalated and th2 as a proposal",
			b.expect(fmt.Sprintf(`document.querySelector(%q) && document.querySelector(%q)`, item(th1, "escalated"), item(th2, "proposal")), "#main"),
			b.waitText(fmt.Sprintf(`#queue-list li[data-thread=%q] .cause`, th1), "We disagree on cost"),
			b.waitText(fmt.Sprintf(`#queue-list li[data-thread=%q] button[data-action=confirm]`, th2), "decided"),
		) {
			return
		}
		// Live: a new escalation arrives through the API while the page is open.
		th4 := c.post(alice, map[string]any{"kind": "ask", "body": "Who owns the release notes?"}).str("thread.id")
		c.post(bob, map[string]any{"kind": "escalate", "thread": th4, "body": "Nobody answers; escalating."})
		b.do(t, "the queue refreshes by itself (events feed, the human's inbox)", b.wait(fmt.Sprintf(`document.querySelector(%q)`, item(th4, "escalated"))))
	})

	t.Run("confirm the proposal: the state and the event", func(t *testing.T) {
		b.navigate(t, "#/threads", "threads")
		b.must(t, "filter decided threads and open th2",
			b.click(`.filters a[data-filter="decided"]`),
			b.wait(fmt.Sprintf(`location.hash === "#/threads?state=decided" && document.querySelector('#thread-list a[href="#/thread/%s"]')`, th2)),
			b.click(fmt.Sprintf(`#thread-list a[href="#/thread/%s"]`, th2)),
			b.ready("thread:"+th2),
			b.wait(`document.querySelector('#thread-state .state.is-proposal[data-state="decided"]')`),
		)
		// Server data is text: the answer's markup is shown, not run.
		if n := b.eval(t, `String(document.querySelectorAll("#messages script, #messages img").length) + "|" + document.getElementById("messages").textContent.includes("<script>alert(1)</script>")`); n != "0|true" {
			t.Errorf("markup in a message body must render as text: %s", n)
		}
		b.do(t, "confirm decided",
			b.click(`#thread-actions button[data-action=confirm]`),
			b.expect(`document.querySelector('#thread-state .state.is-confirmed[data-state="decided"]')`, "#thread-actions"),
			b.wait(`document.querySelector('#timeline li[data-cause="confirm"][data-to="decided"].is-confirmed')`),
		)
	})

	t.Run("mark closed, then reopen", func(t *testing.T) {
		b.navigate(t, "#/thread/"+th2, "thread:"+th2)
		b.must(t, "mark closed",
			chromedp.SetValue(chromedp.ID("mark-state"), "closed"),
			b.click(`#mark-form button[data-action=mark]`),
			b.expect(`document.querySelector('#thread-state .state.is-confirmed[data-state="closed"]')`, "#thread-actions"),
			b.wait(`document.querySelector('#timeline li[data-cause="mark"][data-to="closed"]')`),
		)
		b.must(t, "reopen",
			b.click(`#thread-actions button[data-action=reopen]`),
			b.expect(`document.querySelector('#thread-state .state.is-confirmed[data-state="open"]')`, "#thread-actions"),
			b.wait(`document.querySelector('#timeline li[data-cause="reopen"][data-to="open"]')`),
			b.waitText("#action-result", "Reopen: done"),
		)
	})

	t.Run("the human decides the escalated thread", func(t *testing.T) {
		b.navigate(t, "#/thread/"+th1, "thread:"+th1)
		b.must(t, "due: a human", b.waitText("#thread-state .due", "a human"))
		body := "Ship 1.0 on DynamoDB; revisit the cost in Q3."
		b.must(t, "reply to the escalation with decide (Enter posts)",
			b.click(fmt.Sprintf(`article[data-msg=%q] button[data-action=reply]`, escID)),
			b.waitText("#reply-to", escID),
			chromedp.SetValue(chromedp.ID("post-kind"), "decide"),
			chromedp.SendKeys(chromedp.ID("post-body"), body+"\r"),
			b.expect(fmt.Sprintf(`document.querySelector('article[data-msg=%q] + ol.tree article.author-human')`, escID), "#post-form"),
			b.waitText(fmt.Sprintf(`article[data-msg=%q] + ol.tree article.author-human`, escID), body),
			b.wait(`document.querySelector('#thread-state .state.is-confirmed[data-state="decided"]')`),
			b.waitText("#thread-state .due", "nobody is due"),
			b.wait(`document.querySelector('#timeline li[data-to="decided"].is-confirmed')`),
		)
		if got := b.eval(t, `document.querySelector("article.author-human .act").textContent + "|" + document.querySelector("article.author-human .author").textContent`); got != "decide|human:hana" {
			t.Errorf("the human's message shows %q", got)
		}
		b.screenshot(t, filepath.Join(outDir, "console-thread.png"), 0)
		b.screenshot(t, filepath.Join(outDir, "console-thread-phone.png"), 390)
	})

	t.Run("no layout shift while loading", func(t *testing.T) {
		// A fresh load of a view, on a laptop and on a phone: what loads
		// fills the space reserved for it and moves nothing.
		defer func() { _ = chromedp.Do(b.ctx, chromedp.EmulateViewport(1280, 900)) }()
		for _, width := range []int64{1280, 390} {
			b.must(t, "viewport", chromedp.EmulateViewport(width, 844))
			for _, view := range []string{"thread:" + th1, "threads", "claim:" + clID} {
				hash := "#/" + strings.Replace(view, ":", "/", 1)
				b.navigate(t, hash, view)
				b.must(t, "reload "+hash, chromedp.Reload(), b.ready(view))
				ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
				cls, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`new Promise(done => {
					let sum = 0;
					new PerformanceObserver(list => { for (const e of list.getEntries()) if (!e.hadRecentInput) sum += e.value; })
						.observe({type: "layout-shift", buffered: true});
					setTimeout(() => done(sum), 500);
				})`, chromedp.EvalAwaitPromise))
				cancel()
				if err != nil || cls > 0.01 {
					t.Errorf("%s at %dpx: cumulative layout shift %.4f (%v)", hash, width, cls, err)
				}
			}
		}
	})

	t.Run("a refused action shows its reason", func(t *testing.T) {
		b.navigate(t, "#/thread/"+th1, "thread:"+th1)
		b.must(t, "mark decided again",
			chromedp.SetValue(chromedp.ID("mark-state"), "decided"),
			b.click(`#mark-form button[data-action=mark]`),
			b.refusedWith("#action-result", "invalid_transition"),
			b.waitText("#action-result .refusal-message", "already decided"),
		)
	})

	t.Run("claims: evidence, attestations", func(t *testing.T) {
		b.navigate(t, "#/claim/"+clID, "claim:"+clID)
		b.must(t, "the claim",
			b.wait(`document.querySelector('#claim a.ev-link[href="https://example.org/bench/run-41"]')`),
			b.waitText("#claim code.ev-ref", "javascript:alert(1)"),
			b.wait(`document.querySelector("#claim-history .act-attest")`),
			b.waitText("#claim .cstate", "supported"),
		)
		if n := b.eval(t, `String(document.querySelectorAll('a[href^="javascript"]').length)`); n != "0" {
			t.Errorf("%s javascript: links", n)
		}
	})

	t.Run("a read-only token sees no write buttons", func(t *testing.T) {
		b.signOut(t)
		b.signIn(t, reader, "ainotes:reader")
		b.navigate(t, "#/thread/"+th1, "thread:"+th1)
		b.must(t, "the thread renders", b.wait(`document.querySelector("#messages article[data-msg]")`))
		got := b.eval(t, `JSON.stringify([document.querySelectorAll("[data-write], #post-form, #thread-actions, #mark-form").length,
			document.querySelector('#nav a[data-route="queue"]').hidden, document.querySelector('#nav a[data-route="tokens"]').hidden])`)
		if got != "[0,true,true]" {
			t.Errorf("[write controls, queue link hidden, tokens link hidden] = %s", got)
		}
		b.navigate(t, "#/queue", "queue")
		b.do(t, "the queue is refused for lack of the lock right", b.refusedWith("#queue-status", "token_right_missing"))
	})

	t.Run("mint an agent token in the console and use it", func(t *testing.T) {
		b.signOut(t)
		b.signIn(t, human, "human:hana")
		b.navigate(t, "#/tokens", "tokens")
		if !b.do(t, "create ainotes:newbot (read, write) with Enter",
			b.wait(`document.getElementById("tok-identity") && document.getElementById("tok-right-write").checked`),
			chromedp.SendKeys(chromedp.ID("tok-identity"), "ainotes:newbot\r"),
			b.expect(`(document.getElementById("tok-secret") || {}).value?.startsWith("pt_")`, "#main"),
		) {
			return
		}
		secret := b.eval(t, `document.getElementById("tok-secret").value`)
		st, m := c.do(secret, "POST", "/v1/messages", map[string]any{"kind": "ask", "body": "Hello from a token minted in the console."})
		if st != 201 || m.str("message.from.identity") != "ainotes:newbot" {
			t.Fatalf("posting with the minted token: %d %v", st, m)
		}
		id := b.eval(t, `[...document.querySelectorAll("#token-list li[data-token]")].find(li => li.textContent.includes("ainotes:newbot"))?.dataset.token || ""`)
		if !strings.HasPrefix(id, "tk_") {
			t.Fatalf("the new token is not listed: %q", id)
		}
		btn := fmt.Sprintf(`#token-list li[data-token=%q] button[data-action=revoke]`, id)
		b.must(t, "revoke it (two clicks)",
			b.click(btn),
			b.waitText(btn, "Click again"),
			b.click(btn),
			b.wait(fmt.Sprintf(`!document.querySelector('#token-list li[data-token=%q]')`, id)),
		)
		if st, _ := c.do(secret, "GET", "/v1/whoami", nil); st != 401 {
			t.Errorf("the revoked token still works: %d", st)
		}
	})

	t.Run("sign out clears the session", func(t *testing.T) {
		b.signOut(t)
		if got := b.eval(t, `String(sessionStorage.length)`); got != "0" {
			t.Errorf("sessionStorage after sign out has %s items", got)
		}
	})

	for _, p := range b.problems() {
		t.Errorf("browser: %s", p)
	}
}

// --- the browser ---

type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func chromiumPath(t *testing.T) string {
	p := os.Getenv("PARLEY_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(p); err != nil {
		t.Fatalf("Chromium not found at %s: run make test (installs chromium), or set PARLEY_CHROMIUM (%v)", p, err)
	}
	return p
}

// testOutput is bin/test-output at the module root.
func testOutput(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
	out := filepath.Join(dir, "bin", "test-output")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

func newBrowser(t *testing.T, chrome string) *browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	root, cancelRoot := context.WithTimeout(context.Background(), 8*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(root, opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancelRoot() })
	b := &browser{t: t, ctx: ctx}
	// The first action starts the browser and ties it to the context it
	// gets, so it runs on the tab's own context (bounded by root), not a
	// step's.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start Chromium (%s): %v", chrome, err)
	}
	// Content-Security-Policy violations and uncaught exceptions fail the test.
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text += " " + d.Exception.Description
			}
			b.problem("uncaught exception: " + text)
		case *log.EventEntryAdded:
			if e := ev.Entry; e != nil && strings.Contains(e.Text, "Content Security Policy") {
				b.problem("CSP violation: " + e.Text)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) problem(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, s)
}

func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// do runs steps within the step timeout; a failure is reported with what
// the page shows, and the test goes on.
func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Errorf("%s: %v\n--- the page shows:\n%s", what, err, b.page())
		return false
	}
	return true
}

// must is do, and stops the subtest on failure.
func (b *browser) must(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if !b.do(t, what, steps...) {
		t.FailNow()
	}
}

// page is the visible text of the console, for failure messages.
func (b *browser) page() string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash + "\n" +
		[...document.querySelectorAll(".refusal")].map(e => "REFUSAL: " + e.innerText.replace(/\s+/g, " ")).join("\n") + "\n" +
		document.getElementById("main").innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(s) > 3000 {
		s = s[:3000] + "…"
	}
	return s
}

func (b *browser) eval(t *testing.T, js string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Errorf("evaluate %s: %v", js, err)
	}
	return s
}

// wait polls a JavaScript condition until it is truthy.
func (b *browser) wait(cond string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))
}

// waitText waits until the element selected by css contains text.
func (b *browser) waitText(css, text string) chromedp.Action[chromedp.Void] {
	return b.wait(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.textContent.includes(%s); })()`, jsString(css), jsString(text)))
}

// expect waits until cond holds; when a refusal shows inside where first,
// it fails at once with the refusal's reason and message.
func (b *browser) expect(cond, where string) chromedp.Action[chromedp.Void] {
	refused := jsString(where + " .refusal")
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var v chromedp.Void
		if _, err := b.wait(fmt.Sprintf(`!!(%s) || !!document.querySelector(%s)`, cond, refused))(ctx, tg); err != nil {
			return v, err
		}
		msg, err := chromedp.Evaluate[string](fmt.Sprintf(`!!(%s) ? "" : document.querySelector(%s).innerText.replace(/\s+/g, " ")`, cond, refused))(ctx, tg)
		if err == nil && msg != "" {
			err = fmt.Errorf("refused instead: %s", msg)
		}
		return v, err
	}
}

// refusedWith waits for a refusal inside where and checks its reason.
func (b *browser) refusedWith(where, reason string) chromedp.Action[chromedp.Void] {
	sel := jsString(where + " .refusal-reason")
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var v chromedp.Void
		if _, err := b.wait(fmt.Sprintf(`document.querySelector(%s)`, sel))(ctx, tg); err != nil {
			return v, err
		}
		got, err := chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%s).textContent`, sel))(ctx, tg)
		if err == nil && got != reason {
			err = fmt.Errorf("refused with %q, want %q", got, reason)
		}
		return v, err
	}
}

// click waits for the element and clicks it in one step in the page, so a
// list the live feed re-renders meanwhile cannot pull the node away between
// finding it and clicking it.
func (b *browser) click(css string) chromedp.Action[chromedp.Void] {
	sel := jsString(css)
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var v chromedp.Void
		_, err := b.wait(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e || e.disabled) return false; e.click(); return true; })()`, sel))(ctx, tg)
		return v, err
	}
}

// ready waits until the view is rendered (main[data-view] set, not busy).
func (b *browser) ready(view string) chromedp.Action[chromedp.Void] {
	return b.wait(fmt.Sprintf(`(() => { const m = document.getElementById("main"); return m.dataset.view === %s && m.getAttribute("aria-busy") === "false"; })()`, jsString(view)))
}

func (b *browser) navigate(t *testing.T, hash, view string) {
	t.Helper()
	b.must(t, "go to "+hash, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %s`, jsString(hash))), b.ready(view))
}

func (b *browser) signIn(t *testing.T, token, identity string) {
	t.Helper()
	b.must(t, "sign in as "+identity,
		b.wait(`document.getElementById("signin-token")`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("signin-token").value = ""`),
		chromedp.SendKeys(chromedp.ID("signin-token"), token+"\r"),
		b.waitText("#identity", identity),
	)
}

func (b *browser) signOut(t *testing.T) {
	t.Helper()
	b.must(t, "sign out", b.click("#signout"), b.wait(`document.getElementById("signin-token") && sessionStorage.getItem("parley.token") === null`))
}

// screenshot saves a full-page PNG; width > 0 takes the first screen at that
// (phone) width.
func (b *browser) screenshot(t *testing.T, path string, width int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if width > 0 {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 844, chromedp.EmulateScale(2))); err != nil {
			t.Errorf("viewport: %v", err)
			return
		}
		defer func() { _ = chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)) }()
	}
	// From the top, with no focus ring: the picture is for the README.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`)); err != nil {
		t.Errorf("scroll: %v", err)
	}
	shot := chromedp.FullScreenshot(100)
	if width > 0 {
		shot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, shot)
	if err == nil {
		err = os.WriteFile(path, png, 0o644)
	}
	if err != nil {
		t.Errorf("screenshot %s: %v", path, err)
		return
	}
	t.Logf("screenshot: %s", path)
}

func jsString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// --- the API from Go ---

type client struct {
	t    *testing.T
	base string
}

type obj map[string]any

func (o obj) get(path string) any {
	var cur any = map[string]any(o)
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func (o obj) str(path string) string {
	s, _ := o.get(path).(string)
	return s
}

func (c *client) do(token, method, path string, body any) (int, obj) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

func (c *client) post(token string, env map[string]any) obj {
	c.t.Helper()
	st, m := c.do(token, "POST", "/v1/messages", env)
	if st != 201 {
		c.t.Fatalf("post %v: %d %v", env, st, m)
	}
	return m
}
