// Command push_stream is the push profile's stream consumer: the table's DynamoDB
// stream in, deliveries on the SQS queue out. It is only wiring; the
// delivery core lives in infra/push.
package main

import (
	"fmt"
	"os"

	"github.com/ainotes/parley/infra/lambda"
)

func main() {
	if err := lambda.Main(lambda.PushStream); err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}
