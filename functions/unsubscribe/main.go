// Command unsubscribe is the Lambda function for the unsubscribe operation. It is only
// wiring; the operation lives in core, the HTTP/MCP handling in infra.
package main

import (
	"fmt"
	"os"

	"github.com/ainotes/parley/infra/lambda"
)

func main() {
	if err := lambda.Main("unsubscribe"); err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}
