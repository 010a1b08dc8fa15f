// Command parley is the local server and the admin CLI.
//
//	parley serve --addr 127.0.0.1:8080 [--tokens FILE] [--realm ainotes] [--dynamodb URL|aws] [--table NAME] [--profiles dialectic|none]
//	parley token create --identity ID --rights LIST [--label L] --dynamodb URL|aws [--table NAME]
//	parley token list   --dynamodb URL|aws [--table NAME]
//	parley token revoke ID|PREFIX --dynamodb URL|aws [--table NAME]
//	parley table create --dynamodb URL|aws --table NAME
//
// Without --dynamodb, serve runs an embedded DynamoDB-compatible server in
// memory and prints demo tokens.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  parley serve --addr 127.0.0.1:8080 [--tokens FILE] [--realm ainotes] [--dynamodb URL|aws] [--table NAME] [--profiles dialectic|none]
  parley token create --identity ID --rights LIST [--label L] --dynamodb URL|aws [--table NAME]
  parley token list --dynamodb URL|aws [--table NAME]
  parley token revoke ID|PREFIX --dynamodb URL|aws [--table NAME]
  parley table create --dynamodb URL|aws --table NAME
  parley simulate [--max-messages 200] [--max-time 30s] [--write docs/loop-safety.md]
`

// errUsage marks an error whose message is already a usage hint.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) >= 1 && args[0] == "serve":
		err = serve(ctx, args[1:], stdout, stderr)
	case len(args) >= 1 && args[0] == "simulate":
		err = simulate(ctx, args[1:], stdout)
	case len(args) >= 2 && args[0] == "token":
		err = token(ctx, args[1], args[2:], stdout)
	case len(args) >= 2 && args[0] == "table":
		err = table(ctx, args[1], args[2:], stdout)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "%v\n%s", err, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "parley: %v\n", err)
		return 1
	}
	return 0
}
