package main

import (
	"cmp"
	"context"

	"github.com/ainotes/parley/infra/smoke"
)

// smokeCommand is `parley smoke`: the short conversation of infra/smoke
// against a running server, with a human's token.
func smokeCommand() command {
	return command{name: "smoke", synopsis: "[--url URL] [--token TOKEN]", group: groupAdmin, run: cmdSmoke,
		summary: "run a short conversation against a server (a human's token) and stop at the first surprise",
		details: "--url and --token default to PARLEY_URL and PARLEY_TOKEN, then to the saved login.\n" +
			"It mints two agent tokens and revokes them at the end; it leaves one thread behind."}
}

func cmdSmoke(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("smoke")
	base := fs.String("url", "", "the server's base URL")
	secret := fs.String("token", "", "a human's token")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) > 0 {
		if err == nil {
			err = usageErr("smoke takes no arguments")
		}
		return err
	}
	b, t, _, err := c.login()
	if err != nil {
		return err
	}
	*base, *secret = cmp.Or(*base, b), cmp.Or(*secret, t)
	if *base == "" || *secret == "" {
		return usageErr("smoke needs --url and --token (or a login)")
	}
	u, err := normalizeURL(*base)
	if err != nil {
		return err
	}
	return smoke.Run(ctx, u, *secret, c.stdout)
}
