package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/instance"
)

// cli is what a command runs with: where it reads and writes, the process
// environment, the configuration directory and the HTTP client. main uses
// the process's own; tests inject theirs.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	configDir      func() (string, error) // os.UserConfigDir
	http           *http.Client
	every          time.Duration // how often --follow polls

	json bool // --json: the API's JSON as is
}

func newCLI(stdout, stderr io.Writer) *cli {
	return &cli{
		stdin: os.Stdin, stdout: stdout, stderr: stderr,
		getenv: os.Getenv, configDir: os.UserConfigDir,
		http:  &http.Client{Timeout: time.Minute},
		every: 2 * time.Second,
	}
}

// The environment variables that override the saved login.
const (
	envURL   = "PARLEY_URL"
	envToken = "PARLEY_TOKEN"
)

// savedLogin is the saved login: config.json in the user's configuration
// directory, mode 0600.
type savedLogin struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

func (c *cli) configPath() (string, error) {
	dir, err := c.configDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory: %w", err)
	}
	return filepath.Join(dir, "parley", "config.json"), nil
}

// loadConfig reads the saved login; a missing file is an empty config.
func (c *cli) loadConfig() (savedLogin, string, error) {
	path, err := c.configPath()
	if err != nil {
		return savedLogin{}, "", err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return savedLogin{}, path, nil
	}
	if err != nil {
		return savedLogin{}, path, err
	}
	var cfg savedLogin
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return savedLogin{}, path, fmt.Errorf("%s: %v (run `parley login URL` again)", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(c.stderr, "parley: warning: %s holds a token and is readable by others (chmod 600 it)\n", path)
	}
	return cfg, path, nil
}

// saveConfig writes the login atomically: a private file in a private
// directory.
func (c *cli) saveConfig(cfg savedLogin) (string, error) {
	path, err := c.configPath()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	raw, _ := json.MarshalIndent(cfg, "", "  ")
	f, err := os.CreateTemp(dir, ".config-*.json") // mode 0600
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", err
	}
	if _, err := f.Write(append(raw, '\n')); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(f.Name(), path)
}

// errNotLoggedIn is a usage error: nothing says which server to talk to.
var errNotLoggedIn = fmt.Errorf("%w: not logged in: run `parley login URL`, or set %s and %s", errUsage, envURL, envToken)

// login is the server and token to use: PARLEY_URL and PARLEY_TOKEN take
// precedence over the saved login, each on its own. source says where the
// token came from (saved or env).
func (c *cli) login() (base, secret, source string, err error) {
	cfg, _, err := c.loadConfig()
	if err != nil {
		return "", "", "", err
	}
	source = "saved"
	if u := c.getenv(envURL); u != "" {
		cfg.URL = u
	}
	if t := c.getenv(envToken); t != "" {
		cfg.Token, source = t, "env"
	}
	return cfg.URL, cfg.Token, source, nil
}

// client is the API client for the server the user logged in to. A public
// operation (the manifest) needs no token.
func (c *cli) client(needToken bool) (*api, error) {
	base, secret, source, err := c.login()
	if err != nil {
		return nil, err
	}
	if base == "" || needToken && secret == "" {
		return nil, errNotLoggedIn
	}
	if base, err = normalizeURL(base); err != nil {
		return nil, err
	}
	return &api{base: base, token: secret, http: c.http, source: source}, nil
}

// normalizeURL accepts a server's base URL with or without a trailing
// slash or /v1; without a scheme, loopback hosts get http and others https.
func normalizeURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		host := s
		if i := strings.IndexAny(host, "/"); i >= 0 {
			host = host[:i]
		}
		scheme := "https://"
		if h := strings.Split(strings.TrimPrefix(host, "["), "]")[0]; strings.HasPrefix(h, "localhost") || strings.HasPrefix(h, "127.") || strings.HasPrefix(h, "::1") {
			scheme = "http://"
		}
		s = scheme + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: %q is not an http(s) URL of a Parley server", errUsage, raw)
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	return strings.TrimSuffix(u.String(), "/"), nil
}

// api calls the operations of one server over HTTP, by their names in the
// operation table (the routes come from core.AllOperations, as the
// server's do).
type api struct {
	base, token string
	http        *http.Client
	source      string // where the token came from: saved, env or login
}

// apiError is a refusal: the server's {"error":{reason,message,detail}}.
type apiError struct {
	Status     int
	Reason     string
	Message    string
	Detail     map[string]any
	RetryAfter string
	RequestID  string
	Raw        []byte // the response body as sent
	source     string // the api's
}

func (e *apiError) Error() string { return e.Reason + ": " + e.Message }

// netError is a request that got no answer from the server.
type netError struct {
	url string
	err error
}

func (e *netError) Error() string { return fmt.Sprintf("cannot reach %s: %v", e.url, e.err) }
func (e *netError) Unwrap() error { return e.err }

// call runs one operation: path parameters fill the route, query is sent
// as the query string, body (when not nil) as JSON. It returns the
// response body as sent.
func (a *api) call(ctx context.Context, name string, path map[string]string, query url.Values, body any, header http.Header) ([]byte, error) {
	i := slices.IndexFunc(core.AllOperations(), func(op *core.Operation) bool { return op.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("unknown operation %s", name)
	}
	op := core.AllOperations()[i]
	route := op.Path
	for k, v := range path {
		route = strings.ReplaceAll(route, "{"+k+"}", url.PathEscape(v))
	}
	target := a.base + route
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, op.Method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "parley-cli/"+instance.Version)
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	res, err := a.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &netError{url: a.base, err: err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &netError{url: a.base, err: err}
	}
	if res.StatusCode/100 == 2 {
		return raw, nil
	}
	var refusal struct {
		Error *struct {
			Reason  string         `json:"reason"`
			Message string         `json:"message"`
			Detail  map[string]any `json:"detail"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &refusal) != nil || refusal.Error == nil || refusal.Error.Reason == "" {
		snippet := strings.TrimSpace(string(raw))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "…"
		}
		return nil, fmt.Errorf("unexpected answer from %s %s: HTTP %s: %s (is %s a Parley server?)", op.Method, target, res.Status, snippet, a.base)
	}
	return nil, &apiError{
		Status: res.StatusCode, Reason: refusal.Error.Reason, Message: refusal.Error.Message, Detail: refusal.Error.Detail,
		RetryAfter: res.Header.Get("Retry-After"), RequestID: res.Header.Get("X-Request-Id"), Raw: raw, source: a.source,
	}
}

// get calls an operation and decodes its answer into out; it returns the
// raw answer too, for --json.
func (a *api) get(ctx context.Context, name string, path map[string]string, query url.Values, body any, out any) ([]byte, error) {
	raw, err := a.call(ctx, name, path, query, body, nil)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("unexpected answer to %s: %v", name, err)
		}
	}
	return raw, nil
}

// report prints an error the way every command does and returns the exit
// code: a refusal's reason, message and detail; 2 for usage errors.
func (c *cli) report(err error, usageText string) int {
	if err == nil {
		return 0
	}
	if ae, ok := errors.AsType[*apiError](err); ok {
		if c.json && len(ae.Raw) > 0 {
			c.stdout.Write(ae.Raw)
		}
		fmt.Fprintf(c.stderr, "parley: %s: %s\n", ae.Reason, clean(ae.Message))
		keys := make([]string, 0, len(ae.Detail))
		for k := range ae.Detail {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := ae.Detail[k]
			s, ok := v.(string)
			if !ok {
				b, _ := json.Marshal(v)
				s = string(b)
			}
			fmt.Fprintf(c.stderr, "  %s: %s\n", k, clean(s))
		}
		switch {
		case ae.RetryAfter != "":
			fmt.Fprintf(c.stderr, "  retry after %s s (Retry-After)\n", ae.RetryAfter)
		case ae.Reason == "rate_limited" || ae.Reason == "unavailable":
			fmt.Fprintln(c.stderr, "  retry later (no Retry-After given)")
		}
		if ae.Status >= 500 && ae.RequestID != "" {
			fmt.Fprintf(c.stderr, "  request id: %s\n", ae.RequestID)
		}
		if ae.Reason == "unauthenticated" {
			switch ae.source {
			case "saved":
				fmt.Fprintln(c.stderr, "  the saved token was refused: run `parley login URL` with a valid one")
			case "env":
				fmt.Fprintf(c.stderr, "  the token in %s was refused\n", envToken)
			case "login":
				fmt.Fprintln(c.stderr, "  nothing was saved")
			}
		}
		return 1
	}
	if errors.Is(err, errUsage) {
		if msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": "); msg != errUsage.Error() {
			fmt.Fprintf(c.stderr, "parley: %s\n", msg)
		}
		fmt.Fprint(c.stderr, usageText)
		return 2
	}
	fmt.Fprintf(c.stderr, "parley: %v\n", err)
	return 1
}

// flags makes a command's flag set; every client command takes --json.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&c.json, "json", c.json, "print the API's JSON as is")
	return fs
}

// parseArgs parses flags that may stand before, between or after the
// positional arguments; "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, nil
}

// given reports whether a flag was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// readLineCtx reads one line from f, giving up when ctx ends.
func readLineCtx(ctx context.Context, f io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var b []byte
		var one [1]byte
		for {
			n, err := f.Read(one[:])
			if n == 1 {
				if one[0] == '\n' {
					break
				}
				b = append(b, one[0])
			}
			if err != nil {
				if err == io.EOF && len(b) > 0 {
					err = nil
				}
				done <- result{string(b), err}
				return
			}
		}
		done <- result{string(b), nil}
	}()
	select {
	case r := <-done:
		return strings.TrimRight(r.line, "\r"), r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
