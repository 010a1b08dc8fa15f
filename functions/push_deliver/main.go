// Command push_deliver is the push profile's delivery function: deliveries off the SQS
// queue, one signed attempt each, failed ones queued again with backoff. It is only wiring; the
// delivery core lives in infra/push.
package main

import (
	"fmt"
	"os"

	"github.com/ainotes/parley/infra/lambda"
)

func main() {
	if err := lambda.Main(lambda.PushDeliver); err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}
