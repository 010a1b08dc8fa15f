package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ainotes/parley/core"
)

// The push profile's commands: subscriptions over the API, and checking a
// delivery's signature where a receiver's code cannot yet.

func cmdSubscribe(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("subscribe")
	events := fs.String("events", core.PushTurn, "comma-separated: turn, state, message")
	thread := fs.String("thread", "", "only this thread (th_N); default the whole instance")
	pos, a, err := c.begin(fs, args, 1, "subscribe takes the receiver's URL: parley subscribe https://… [--events turn,state,message] [--thread th_N]")
	if err != nil {
		return err
	}
	body := map[string]any{"url": pos[0], "events": strings.Split(*events, ",")}
	if *thread != "" {
		body["thread"] = *thread
	}
	var sub core.NewSubscription
	if done, err := c.show(ctx, a, "subscribe", nil, nil, body, &sub); done {
		return err
	}
	fmt.Fprintln(c.stdout, sub.Secret)
	fmt.Fprintf(c.stdout, "# %s  %s  %s  (the secret above is shown once: give it to the receiver to verify Parley-Signature)\n",
		sub.ID, strings.Join(sub.Events, ","), sub.URL)
	return nil
}

func cmdSubscriptions(ctx context.Context, c *cli, args []string) error {
	_, a, err := c.begin(c.flags("subscriptions"), args, 0, "subscriptions takes no arguments")
	if err != nil {
		return err
	}
	var page core.SubscriptionPage
	if done, err := c.show(ctx, a, "list_subscriptions", nil, nil, nil, &page); done {
		return err
	}
	if len(page.Subscriptions) == 0 {
		fmt.Fprintln(c.stdout, "No subscriptions.")
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "ID\tEVENTS\tTHREAD\tURL\tDELIVERED\tFAILED\tPENDING\tDROPPED\tLAST SUCCESS\tLAST FAILURE")
	stampOf := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return stamp(*t)
	}
	for _, s := range page.Subscriptions {
		th := "all"
		if s.Thread != nil {
			th = *s.Thread
		}
		st := s.Stats
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", s.ID, strings.Join(s.Events, ","), th, s.URL,
			st.Delivered, st.Failures, st.Pending, st.Dropped, stampOf(st.LastSuccess), stampOf(st.LastFailure))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range page.Subscriptions {
		if s.Stats.LastError != "" {
			fmt.Fprintf(c.stdout, "%s last error: %s\n", s.ID, clean(s.Stats.LastError))
		}
	}
	return nil
}

func cmdUnsubscribe(ctx context.Context, c *cli, args []string) error {
	pos, a, err := c.begin(c.flags("unsubscribe"), args, 1, "unsubscribe takes a subscription id (sub_…)")
	if err != nil {
		return err
	}
	var sub core.SubscriptionView
	if done, err := c.show(ctx, a, "unsubscribe", map[string]string{"id": pos[0]}, nil, nil, &sub); done {
		return err
	}
	fmt.Fprintf(c.stdout, "%s removed; its deliveries stop\n", sub.ID)
	return nil
}

// errBadSignature is verify-signature's "no": exit 1, like a refusal.
var errBadSignature = errors.New("the signature does not verify")

// cmdVerifySignature checks a delivery as a receiver must: the body as
// received (stdin or --body FILE), the Parley-Signature header, the
// subscription's secret, and a bound on the signature's age.
func cmdVerifySignature(_ context.Context, c *cli, args []string) error {
	fs := c.flags("verify-signature")
	secret := fs.String("secret", c.getenv("PARLEY_WEBHOOK_SECRET"), "the subscription's secret (whsec_…; default $PARLEY_WEBHOOK_SECRET)")
	header := fs.String("header", "", "the Parley-Signature header's value: t=<unix>,v1=<hex>")
	bodyFile := fs.String("body", "-", "the delivery's body exactly as received; - for standard input")
	tolerance := fs.Duration("tolerance", 5*time.Minute, "the oldest signature accepted")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if *secret == "" || *header == "" {
		return usageErr("verify-signature needs --secret (or PARLEY_WEBHOOK_SECRET) and --header")
	}
	var body []byte
	var err error
	if *bodyFile == "-" {
		body, err = io.ReadAll(c.stdin)
	} else {
		body, err = os.ReadFile(*bodyFile)
	}
	if err != nil {
		return err
	}
	if err := core.VerifySignature(*secret, *header, body, time.Now(), *tolerance); err != nil {
		return fmt.Errorf("%w: %v", errBadSignature, err)
	}
	fmt.Fprintln(c.stdout, "ok: signed with this secret, within the tolerance")
	return nil
}
