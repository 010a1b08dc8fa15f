package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/instance"
	"github.com/ainotes/parley/infra/localdb"
)

// storeFlags are the flags every command that touches the table takes.
type storeFlags struct {
	dynamodb string
	table    string
	realm    string
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.dynamodb, "dynamodb", "", "DynamoDB endpoint URL, or \"aws\" for real DynamoDB with the default AWS config")
	fs.StringVar(&s.table, "table", "", "DynamoDB table name (default parley; required with --dynamodb aws)")
	fs.StringVar(&s.realm, "realm", "ainotes", "the realm of agent identities (<realm>:<handle>)")
}

// check completes the flags: real DynamoDB needs the table named (the
// stack's TableName output); elsewhere it defaults to "parley".
func (s *storeFlags) check() error {
	if s.table == "" {
		if s.dynamodb == config.AWS {
			return fmt.Errorf("%w: --table is required with --dynamodb aws (the stack's TableName output)", errUsage)
		}
		s.table = "parley"
	}
	return nil
}

// open wires the instance on the table. With create, a missing table is
// created — only ever on a local endpoint: on real DynamoDB tables come
// from the stack or from `parley table create`.
func (s *storeFlags) open(ctx context.Context, o core.Options, create bool) (*instance.Instance, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	o.Realm = s.realm
	return instance.Open(ctx, instance.Config{DynamoDB: s.dynamodb, Table: s.table, Create: create, Service: o})
}

type tokenFileEntry struct {
	Token    string   `json:"token"`
	Identity string   `json:"identity"`
	Rights   []string `json:"rights"`
	Label    string   `json:"label"`
}

func loadTokens(ctx context.Context, svc *core.Service, path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var entries []tokenFileEntry
	if err := core.DecodeStrict(raw, &entries); err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	for i, e := range entries {
		if _, err := svc.ImportToken(ctx, e.Token, core.TokenSpec{Identity: e.Identity, Rights: e.Rights, Label: e.Label}); err != nil {
			return 0, fmt.Errorf("%s: entry %d (%s): %v", path, i, e.Identity, err)
		}
	}
	return len(entries), nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	tokens := fs.String("tokens", "", "JSON file of tokens to load (stored hashed)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	rateLimit := fs.Int("rate-limit", core.ReferenceLimits().PostsPerMinute, "posts per token per minute, enforced through DynamoDB; 0 = off")
	profiles := fs.String("profiles", core.ProfileDialectic+","+core.ProfilePush, `optional profiles to run, comma-separated ("dialectic", "push"), or "none"`)
	pushKey := fs.String("push-key", "", "the key that derives webhook secrets (push profile); default: a random one for this process")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level %q", errUsage, *logLevel)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	embedded := sf.dynamodb == ""
	if embedded {
		db, err := localdb.Start("127.0.0.1:0")
		if err != nil {
			return err
		}
		defer db.Close()
		sf.dynamodb = db.URL
	}
	if *rateLimit < 0 {
		return fmt.Errorf("%w: --rate-limit must be 0 or more", errUsage)
	}
	limits := core.ReferenceLimits()
	limits.PostsPerMinute = *rateLimit
	profs := config.ParseProfiles(*profiles)
	key := []byte(*pushKey)
	if len(key) == 0 && slices.Contains(profs, core.ProfilePush) {
		// Webhook secrets derive from the key: a random one is fine for a
		// store that dies with the process; for a lasting one, pass the key.
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		if !embedded {
			logger.Warn("push: no --push-key; webhook secrets change when this server restarts")
		}
	}
	if err := sf.check(); err != nil {
		return err
	}
	sf.realm = strings.TrimSpace(sf.realm)
	inst, err := instance.Open(ctx, instance.Config{
		DynamoDB: sf.dynamodb, Table: sf.table, Create: true, LocalPush: true, Log: logger,
		Service: core.Options{Realm: sf.realm, Profiles: profs, Limits: limits,
			// Receivers on loopback and plain http only for a server that is
			// itself on loopback: a local one.
			Push: core.PushPolicy{Key: key, Local: loopbackAddr(*addr)}},
	})
	if err != nil {
		return err
	}
	svc := inst.Service
	if inst.Push != nil {
		// Deliveries stop with the server, however it returns.
		pctx, stopPush := context.WithCancel(ctx)
		inst.Push.Run(pctx, 4)
		defer inst.Push.Wait()
		defer stopPush()
	}
	if *tokens != "" {
		n, err := loadTokens(ctx, svc, *tokens)
		if err != nil {
			return err
		}
		logger.Info("tokens loaded", slog.Int("count", n))
	}
	mux, err := inst.Handler(logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	if embedded {
		if err := printDemo(ctx, svc, base, stdout); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "Parley on %s (DynamoDB %s, table %s)\n", base, sf.dynamodb, sf.table)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// printDemo creates fresh tokens for the demo identities and shows each
// secret once, with a first request to try.
func printDemo(ctx context.Context, svc *core.Service, base string, w io.Writer) error {
	demo := []core.TokenSpec{
		{Identity: svc.Realm() + ":alice", Rights: []string{"read", "write"}},
		{Identity: svc.Realm() + ":bob", Rights: []string{"read", "write"}},
		{Identity: svc.Realm() + ":mod", Rights: []string{"read", "write", "lock", "verify"}, Label: "mod"},
		{Identity: "human:hana"},
	}
	fmt.Fprintf(w, "Parley on %s\n", base)
	fmt.Fprintln(w, "Storage: embedded DynamoDB-compatible server, in memory; everything is gone when this process stops.")
	fmt.Fprintln(w, "Demo tokens (shown once):")
	secrets := make([]string, len(demo))
	for i, spec := range demo {
		secret, t, err := svc.CreateToken(ctx, spec)
		if err != nil {
			return err
		}
		secrets[i] = secret
		rights := make([]string, len(t.Rights))
		for j, r := range t.Rights {
			rights[j] = string(r)
		}
		label := ""
		if t.Label != "" {
			label = " (label " + t.Label + ")"
		}
		fmt.Fprintf(w, "  %-16s %-22s %s%s\n", t.Identity, strings.Join(rights, ","), secret, label)
	}
	body, _ := json.Marshal(map[string]string{"kind": "ask", "body": "What should we call the first release?"})
	fmt.Fprintf(w, "Post a first ask as alice:\n  curl -s -X POST %s/v1/messages -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '%s'\n", base, secrets[0], body)
	fmt.Fprintf(w, "Manifest: curl -s %s/v1/manifest   MCP: POST %s/mcp\n", base, base)
	return nil
}

// loopbackAddr reports whether a listen address is on loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && loopback(host)
}
