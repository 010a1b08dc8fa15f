// Command console is the Lambda function for the moderation console (GET /
// and GET /ui/…) and for API Gateway's $default route: every request no
// other route takes gets Parley's own JSON 404, or 405 with Allow on a known
// path. It is only wiring; the handlers live in infra.
package main

import (
	"fmt"
	"os"

	"github.com/ainotes/parley/infra/lambda"
)

func main() {
	if err := lambda.Main(lambda.Console); err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}
