package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ainotes/parley/core"
	"github.com/ainotes/parley/infra/config"
	"github.com/ainotes/parley/infra/dynamo"
)

func token(ctx context.Context, sub string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sf storeFlags
	sf.register(fs)
	identity := fs.String("identity", "", "identity: <realm>:<handle> or human:<name>")
	rights := fs.String("rights", "", "comma-separated rights: read,write,lock,verify")
	label := fs.String("label", "", "label shown for a lock holder's marks")
	// Flags may follow the positional id of revoke.
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) > 0 {
			positional = append(positional, args[0])
			args = args[1:]
		}
	}
	if sf.dynamodb == "" {
		return fmt.Errorf("%w: token commands need --dynamodb URL|aws (the embedded store lives only inside a running serve)", errUsage)
	}
	inst, err := sf.open(ctx, core.Options{}, false)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		if *identity == "" || *rights == "" && !core.IsHuman(*identity) {
			return fmt.Errorf("%w: token create needs --identity and --rights", errUsage)
		}
		var list []string
		if *rights != "" {
			list = strings.Split(*rights, ",")
		}
		svc := inst.Service
		secret, t, err := svc.CreateToken(ctx, core.TokenSpec{Identity: *identity, Rights: list, Label: *label})
		if err != nil {
			return tableHint(err, sf.table)
		}
		fmt.Fprintf(stdout, "%s\n", secret)
		fmt.Fprintf(stdout, "# %s  %s  %s  (the secret above is shown once; only its hash is stored)\n", t.ID, t.Identity, joinRights(t.Rights))
	case "list":
		var all []core.TokenView
		q := core.ListTokensInput{Limit: 200}
		for {
			page, err := inst.Service.TokenPage(ctx, q)
			if err != nil {
				return tableHint(err, sf.table)
			}
			all = append(all, page.Tokens...)
			if page.Cursor == nil {
				break
			}
			q.Cursor = *page.Cursor
		}
		return printTokens(stdout, all)
	case "revoke":
		if len(positional) != 1 {
			return fmt.Errorf("%w: token revoke takes one token id or prefix", errUsage)
		}
		t, err := inst.Service.RevokeToken(ctx, positional[0])
		err = tableHint(err, sf.table)
		if errors.Is(err, core.ErrNotFound) {
			return fmt.Errorf("no token matches %q", positional[0])
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s (%s)\n", t.ID, t.Identity)
	default:
		return fmt.Errorf("%w: unknown token command %q", errUsage, sub)
	}
	return nil
}

// tableHint turns "no such table" into what to do about it.
func tableHint(err error, table string) error {
	if _, missing := errors.AsType[*types.ResourceNotFoundException](err); missing {
		return fmt.Errorf("table %s does not exist: deploy the stack, or create it with `parley table create --table %s`: %w", table, table, err)
	}
	return err
}

// table creates the table for self-hosting on real DynamoDB or on any
// compatible endpoint: the same definition the stack declares, with TTL on
// the expiry attribute. Nothing else in the CLI creates tables on AWS.
func table(ctx context.Context, sub string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("table "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sf storeFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("%w: table create takes --dynamodb URL|aws --table NAME", errUsage)
	}
	if sub != "create" {
		return fmt.Errorf("%w: unknown table command %q", errUsage, sub)
	}
	if sf.dynamodb == "" {
		return fmt.Errorf("%w: table create needs --dynamodb URL|aws", errUsage)
	}
	if err := sf.check(); err != nil {
		return err
	}
	client, err := config.DynamoDB(ctx, sf.dynamodb)
	if err != nil {
		return err
	}
	if err := dynamo.Provision(ctx, client, sf.table, sf.dynamodb == config.AWS); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "table %s is ready\n", sf.table)
	return nil
}

func joinRights(rs []core.Right) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
