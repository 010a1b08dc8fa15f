// Package console serves Parley's moderation console: one HTML page, a
// stylesheet and a few ES modules, embedded in the binary. The page talks
// only to the same-origin HTTP API (/v1/…) with the token the moderator
// pasted, kept in sessionStorage; nothing is fetched from anywhere else, and
// the Content-Security-Policy says so.
//
// Two routes, both GET (and HEAD):
//
//	/            index.html (Cache-Control: no-cache, ETag)
//	/ui/<v>/…    the assets; <v> is a hash of all of them, so an asset under
//	             the current <v> is immutable and cached for a year. Any other
//	             <v> is still served, uncached, so a page loaded just before a
//	             deploy keeps working.
//
// Mount adds them to a mux that serves the API (parley serve); Handler is a
// handler of its own (the console's Lambda function, routes "GET /" and
// "GET /ui/{proxy+}").
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
)

//go:embed static
var files embed.FS

// CSP is the Content-Security-Policy of every console response: scripts,
// styles and connections from this origin only, no inline code, no frames.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Prefix is where the assets live.
const Prefix = "/ui/"

type asset struct {
	body  []byte
	ctype string
}

type bundle struct {
	version string           // hash of every asset: the path segment after /ui/
	index   []byte           // index.html with the version filled in
	assets  map[string]asset // by path below static/, e.g. "app.js", "views/queue.js"
}

var load = sync.OnceValue(func() *bundle {
	b := &bundle{assets: map[string]asset{}}
	var names []string
	err := fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		panic("console: embedded assets: " + err.Error())
	}
	sort.Strings(names)
	h := sha256.New()
	var index []byte
	for _, p := range names {
		raw, err := files.ReadFile(p)
		if err != nil {
			panic("console: embedded assets: " + err.Error())
		}
		name := strings.TrimPrefix(p, "static/")
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(raw)
		if name == "index.html" {
			index = raw
			continue
		}
		b.assets[name] = asset{body: raw, ctype: contentType(name)}
	}
	b.version = hex.EncodeToString(h.Sum(nil))[:12]
	b.index = bytes.ReplaceAll(index, []byte("{{v}}"), []byte(b.version))
	return b
})

// contentType is fixed per extension, not taken from the system's MIME
// table: module scripts must be served as JavaScript, and nosniff is on.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".html":
		return "text/html; charset=utf-8"
	}
	return "application/octet-stream"
}

// Version is the asset version the index page refers to.
func Version() string { return load().version }

// Mount registers GET /{$} (the page) and GET /ui/ (its assets) on mux.
// Both patterns are more specific than a catch-all "/", so the API's mux
// keeps answering every other path.
func Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", serveIndex)
	mux.HandleFunc("GET "+Prefix, serveAsset)
}

// Handler serves the console alone: the same two routes as Mount.
func Handler() http.Handler {
	mux := http.NewServeMux()
	Mount(mux)
	return mux
}

// secure sets the headers every console response carries.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func serveIndex(w http.ResponseWriter, r *http.Request) {
	b := load()
	h := w.Header()
	secure(h)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", `"`+b.version+`"`)
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(b.index))
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	b := load()
	h := w.Header()
	secure(h)
	version, name, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	a, found := b.assets[name]
	if !ok || !found || version == "" {
		h.Set("Cache-Control", "no-store")
		http.Error(w, "404 not found", http.StatusNotFound)
		return
	}
	h.Set("Content-Type", a.ctype)
	if version == b.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("ETag", `"`+b.version+`"`)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
