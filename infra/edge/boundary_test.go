package edge

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestTransportsShareTheEdgeNotEachOther: the HTTP and MCP adapters meet
// in this package (and in infra/instance, which mounts both); neither
// imports the other, tests included.
func TestTransportsShareTheEdgeNotEachOther(t *testing.T) {
	for dir, other := range map[string]string{"../httpapi": "infra/mcpapi", "../mcpapi": "infra/httpapi"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) < 3 {
			t.Fatalf("%s: %d Go files (%v)", dir, len(files), err)
		}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				if strings.HasSuffix(strings.Trim(imp.Path.Value, `"`), other) {
					t.Errorf("%s imports %s", f, other)
				}
			}
		}
	}
}
