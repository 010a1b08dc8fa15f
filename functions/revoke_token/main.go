// Command revoke_token is the Lambda function for the revoke_token operation. It is only
// wiring; the operation lives in core, the HTTP/MCP handling in infra.
package main

import (
	"fmt"
	"os"

	"github.com/ainotes/parley/infra/lambda"
)

func main() {
	if err := lambda.Main("revoke_token"); err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}
