package mcpapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var updateSchemas = flag.Bool("update-schemas", false, "rewrite schemas.json from the Go types")

// TestSchemasAreCurrent: the embedded schemas are exactly what the Go types
// infer, so they cannot drift from the code.
func TestSchemasAreCurrent(t *testing.T) {
	gen, err := generateSchemas()
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(gen, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *updateSchemas {
		if err := os.WriteFile("schemas.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(schemasJSON, want) {
		t.Fatal("schemas.json is stale: go test ./infra/mcpapi -run SchemasAreCurrent -update-schemas")
	}
	if len(gen) != 12 {
		t.Fatalf("%d tools", len(gen))
	}
}
