// Command parley is the local server, the admin CLI, and a client of the
// HTTP API for people and shell-based agents.
//
//	parley serve --addr 127.0.0.1:8080 [--tokens FILE] [--realm ainotes] [--dynamodb URL|aws] [--table NAME] [--profiles dialectic|none]
//	parley token create --identity ID --rights LIST [--label L] --dynamodb URL|aws [--table NAME]
//	parley token list   --dynamodb URL|aws [--table NAME]
//	parley token revoke ID|PREFIX --dynamodb URL|aws [--table NAME]
//	parley table create --dynamodb URL|aws --table NAME
//
//	parley login URL [--token-stdin]
//	parley inbox | queue | threads | thread th_N | events --follow | …
//	parley ask "…" | answer th_N "…" | post KIND --thread th_N "…" | mark | confirm | reopen
//	parley token create|list|revoke (over the API when logged in)
//
// Without --dynamodb, serve runs an embedded DynamoDB-compatible server in
// memory and prints demo tokens. `parley help` lists every command.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/ainotes/parley/core"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks an error whose message is already a usage hint.
var errUsage = errors.New("usage")

// run runs one command line and returns the exit status: 0, 1 for a
// refusal or a failure, 2 for a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return newCLI(stdout, stderr).run(ctx, args)
}

// command is one subcommand of parley.
type command struct {
	name     string
	synopsis string // the arguments, after the name
	summary  string
	details  string
	group    int
	run      func(ctx context.Context, c *cli, args []string) error
}

// The groups of the usage text.
const (
	groupClient = iota
	groupActs
	groupAdmin
)

var groupTitles = []string{
	"Client (over the HTTP API: `parley login URL` first, or set PARLEY_URL and PARLEY_TOKEN):",
	"Acts (each posts one message; see `parley help post`):",
	"Server and administration:",
}

// commands lists every command; the acts come from core.Acts, so a new
// act gets its shortcut without a change here.
func commands() []command {
	cs := []command{
		{name: "login", synopsis: "URL [--token-stdin]", group: groupClient, run: cmdLogin,
			summary: "check a token against the server (GET /v1/whoami) and save both",
			details: "Asks for the token on stdin (without echo on a terminal); --token-stdin reads it from a pipe.\n" +
				"Saves {url, token} to the user's configuration directory (parley/config.json, mode 0600).\n" +
				"PARLEY_URL and PARLEY_TOKEN, when set, take precedence over the saved login."},
		{name: "logout", group: groupClient, run: cmdLogout, summary: "forget the saved login (the token stays valid until revoked)"},
		{name: "whoami", group: groupClient, run: cmdWhoami, summary: "the identity, rights and label of your token"},
		{name: "inbox", synopsis: "[--extension E] [--since CURSOR] [--limit N] [--follow]", group: groupClient, run: cmdInbox,
			summary: "threads whose turn is yours",
			details: "--since shows only turns newer than an earlier answer's cursor; --follow keeps polling and\n" +
				"prints each new turn as it comes (repeats dropped by thread and awaiting_version) until interrupted."},
		{name: "queue", synopsis: "[--cursor C] [--limit N]", group: groupClient, run: cmdQueue,
			summary: "the review queue: escalations and unconfirmed proposals, oldest first (lock right)"},
		{name: "threads", synopsis: "[--state S] [--limit N] [--cursor C]", group: groupClient, run: cmdThreads,
			summary: "list threads, newest first"},
		{name: "thread", synopsis: "th_N", group: groupClient, run: cmdThread,
			summary: "a thread as a tree, with its state, who is due and its state history (all pages)"},
		{name: "post", synopsis: "KIND [--thread th_N] [--parent msg_N] [--extension E] [--evidence kind=ref[::note] …] [--claim cl_N] [--supersedes cl_N …] [--valid-until T] [--model M] [--idempotency-key K] \"body\"",
			group: groupClient, run: cmdPost, summary: "post one message of any kind",
			details: "The body is the remaining arguments, joined by spaces; \"-\" reads it from stdin.\n" +
				"Without --thread, ask and assert open a new thread. --parent defaults to the thread's root.\n" +
				"--evidence kind=ref[::note] may be repeated (kinds: url, hash, artifact, commit, log, reproducer,\n" +
				"note, other); the note follows the last \"::\"; a JSON object {\"kind\",\"ref\",\"note\"} works too.\n" +
				"The shortcut `parley KIND th_N \"…\"` (or `parley KIND cl_N \"…\"` for attest, refute, verify) is the same."},
		{name: "mark", synopsis: "th_N STATE", group: groupClient, run: cmdMark,
			summary: "set a thread's state (answered, decided, closed, deferred, obsolete, rejected)"},
		{name: "confirm", synopsis: "th_N [STATE]", group: groupClient, run: cmdConfirm,
			summary: "confirm the thread's proposal (lock holder or human)",
			details: "Reads the thread, shows the proposal and confirms the state it saw; if the proposal changed\n" +
				"meanwhile nothing is confirmed (invalid_transition). With STATE, confirms that state without reading."},
		{name: "reopen", synopsis: "th_N", group: groupClient, run: cmdReopen, summary: "set a closed or side-state thread open again"},
		{name: "events", synopsis: "[--thread th_N] [--since CURSOR] [--limit N] [--follow]", group: groupClient, run: cmdEvents,
			summary: "state changes, oldest first",
			details: "Without --limit, prints every event since --since (or the beginning) up to now and the cursor to\n" +
				"continue from. --follow keeps polling with the returned cursor, drops repeats by (thread, seq) and\n" +
				"prints new events as they come until interrupted (with --json one JSON object a line)."},
		{name: "claim", synopsis: "cl_N", group: groupClient, run: cmdClaim, summary: "a claim with its evidence and history (dialectic)"},
		{name: "claims", synopsis: "[--thread th_N] [--state S] [--limit N] [--cursor C]", group: groupClient, run: cmdClaims,
			summary: "list claims, newest first (dialectic)"},
		{name: "subscribe", synopsis: "URL [--events turn,state,message] [--thread th_N]", group: groupClient, run: cmdSubscribe,
			summary: "signed webhooks to URL (push profile); prints the signing secret once",
			details: "turn: a thread now awaits you; state: a thread's events; message: a thread's messages.\n" +
				"https only (plain http only to loopback on a local server). Deliveries are POSTs with the\n" +
				"headers Parley-Event, Parley-Delivery (drop repeats) and Parley-Signature; see verify-signature."},
		{name: "subscriptions", group: groupClient, run: cmdSubscriptions,
			summary: "your token's subscriptions and how their deliveries went"},
		{name: "unsubscribe", synopsis: "sub_…", group: groupClient, run: cmdUnsubscribe, summary: "remove a subscription; its deliveries stop"},
		{name: "verify-signature", synopsis: "--secret whsec_… --header 't=…,v1=…' [--body FILE|-] [--tolerance 5m]", group: groupClient, run: cmdVerifySignature,
			summary: "check a delivery's Parley-Signature against its body (exit 0 valid, 1 not)",
			details: "The signature is hex HMAC-SHA256(secret, \"<t>.<body>\") over the raw body as received; a t older\n" +
				"than --tolerance is refused (replays). No login needed."},
		{name: "manifest", group: groupClient, run: cmdManifest, summary: "what the server speaks: its acts and operations (no token needed)"},
		{name: "token", synopsis: "create --identity ID [--rights LIST] [--label L] | list | revoke tk_…", group: groupClient, run: cmdToken,
			summary: "tokens over the API (human tokens only); with --dynamodb, on the table directly",
			details: "Over the API when logged in: POST /v1/tokens, GET /v1/tokens, DELETE /v1/tokens/{id}.\n" +
				"The store form, for the first token after a deployment (AWS credentials, no server needed):\n" +
				"  parley token create --identity ID --rights LIST [--label L] --dynamodb URL|aws [--table NAME]\n" +
				"  parley token list --dynamodb URL|aws [--table NAME]\n" +
				"  parley token revoke ID|PREFIX --dynamodb URL|aws [--table NAME]\n" +
				"create prints the secret once (only its SHA-256 is stored) and the public id tk_…;\n" +
				"revoke takes that id or a unique prefix."},
	}
	for _, act := range core.Acts {
		syn := "th_N \"body\""
		switch {
		case act.Opens:
			syn = "[th_N] \"body\""
		case act.Claim == core.ClaimActsOn:
			syn = "cl_N \"body\""
		}
		if act.Evidence {
			syn += " --evidence kind=ref[::note] …"
		}
		syn += " [--parent msg_N] [--extension E]"
		d := "Awaits: " + act.Awaits + "."
		if act.Mark != "" {
			d += "\nMarks: " + act.Mark + "."
		}
		if act.Profile != "" {
			d += "\nProfile: " + act.Profile + "."
		}
		d += "\nThe flags of `parley post` apply."
		cs = append(cs, command{name: string(act.Kind), synopsis: syn, group: groupActs, summary: act.Does, details: d, run: actCommand(act.Kind)})
	}
	cs = append(cs,
		command{name: "serve", synopsis: "[--addr 127.0.0.1:8080] [--dynamodb URL|aws] [--table NAME] [--tokens FILE] [--realm ainotes] [FLAGS]",
			group: groupAdmin, summary: "run the server (embedded in-memory store and demo tokens without --dynamodb)",
			run: func(ctx context.Context, c *cli, args []string) error { return serve(ctx, args, c.stdout, c.stderr) }},
		// Listed for the usage only: lookup finds the client entry, which
		// routes to this form when --dynamodb is given.
		command{name: "token", synopsis: "create --identity ID --rights LIST [--label L] | list | revoke ID|PREFIX  --dynamodb URL|aws [--table NAME]", group: groupAdmin,
			summary: "tokens on the table directly: the first human token after a deployment (AWS credentials)"},
		command{name: "table", synopsis: "create --dynamodb URL|aws --table NAME", group: groupAdmin, summary: "create the table for self-hosting",
			run: func(ctx context.Context, c *cli, args []string) error {
				if len(args) == 0 {
					return usageErr("table takes a subcommand: create")
				}
				return table(ctx, args[0], args[1:], c.stdout)
			}},
		command{name: "simulate", synopsis: "[--max-messages 200] [--max-time 30s] [--write docs/loop-safety.md]", group: groupAdmin,
			summary: "run the loop-safety simulation",
			run:     func(ctx context.Context, c *cli, args []string) error { return simulate(ctx, args, c.stdout) }},
		smokeCommand(),
	)
	return append(cs,
		command{name: "version", group: groupAdmin, run: cmdVersion, summary: "print the version"},
		command{name: "help", synopsis: "[COMMAND]", group: groupAdmin, summary: "show this help, or one command's"},
	)
}

func lookup(name string) (command, bool) {
	cs := commands()
	i := slices.IndexFunc(cs, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return cs[i], true
}

// usageText is the whole usage.
func usageText() string {
	var b strings.Builder
	b.WriteString("usage: parley COMMAND [ARGS] [--json]\n")
	cs := commands()
	for g, title := range groupTitles {
		fmt.Fprintf(&b, "\n%s\n", title)
		for _, c := range cs {
			if c.group != g {
				continue
			}
			line := "  parley " + c.name
			if c.synopsis != "" {
				line += " " + c.synopsis
			}
			fmt.Fprintf(&b, "%s\n      %s\n", line, c.summary)
		}
	}
	b.WriteString("\nEvery client command takes --json: the API's JSON as is (one document; with --follow one object a line).\n")
	b.WriteString("Exit status: 0 done, 1 refused or failed (the reason on stderr), 2 usage.\n")
	b.WriteString("`parley help COMMAND` shows one command.\n")
	return b.String()
}

// helpText is one command's usage.
func helpText(c command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: parley %s %s\n\n%s\n", c.name, c.synopsis, c.summary)
	if c.details != "" {
		fmt.Fprintf(&b, "\n%s\n", c.details)
	}
	if c.name == "serve" { // serve's own flags, with their defaults
		var flags bytes.Buffer
		_ = serve(context.Background(), []string{"-h"}, io.Discard, &flags)
		if _, defaults, ok := strings.Cut(flags.String(), "\n"); ok && strings.TrimSpace(defaults) != "" {
			fmt.Fprintf(&b, "\nflags:\n%s\n", strings.TrimRight(defaults, "\n"))
		}
	}
	if c.group != groupAdmin || c.name == "version" {
		b.WriteString("\n--json prints the API's JSON as is.\n")
	}
	return b.String()
}

// wantsHelp reports whether the arguments ask for help (before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func (c *cli) run(ctx context.Context, args []string) int {
	// Flags before the command: --json, --help, --version.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "--json", "-json":
			c.json = true
		case "-h", "-help", "--help":
			fmt.Fprint(c.stdout, usageText())
			return 0
		case "--version", "-version":
			args[0] = "version"
			continue
		default:
			fmt.Fprintf(c.stderr, "parley: unknown flag %s\n\n%s", args[0], usageText())
			return 2
		}
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usageText())
		return 2
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		if len(rest) == 0 {
			fmt.Fprint(c.stdout, usageText())
			return 0
		}
		cmd, ok := lookup(rest[0])
		if !ok {
			fmt.Fprintf(c.stderr, "parley: no command %q\n\n%s", rest[0], usageText())
			return 2
		}
		fmt.Fprint(c.stdout, helpText(cmd))
		return 0
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(c.stderr, "parley: unknown command %q\n\n%s", name, usageText())
		return 2
	}
	if wantsHelp(rest) {
		fmt.Fprint(c.stdout, helpText(cmd))
		return 0
	}
	return c.report(cmd.run(ctx, c, rest), "usage: parley "+cmd.name+" "+cmd.synopsis+"\n(`parley help "+cmd.name+"` for more)\n")
}

// cmdToken routes between the two forms of the token commands: with
// --dynamodb, on the table directly (the first token after a deployment);
// without, over the API as the logged-in human.
func cmdToken(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		return usageErr("token takes a subcommand: create, list or revoke")
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if f := strings.TrimLeft(a, "-"); strings.HasPrefix(a, "-") && (f == "dynamodb" || strings.HasPrefix(f, "dynamodb=")) {
			return token(ctx, args[0], args[1:], c.stdout)
		}
	}
	return apiToken(ctx, c, args[0], args[1:])
}
