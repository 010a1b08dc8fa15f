package core

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoreImportsNoAdapter keeps the domain at the centre: core may not
// import AWS, HTTP or MCP packages, nor anything of infra.
func TestCoreImportsNoAdapter(t *testing.T) {
	forbidden := []string{"github.com/aws/", "net/http", "github.com/modelcontextprotocol/", "github.com/ainotes/parley/infra"}
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			for _, bad := range forbidden {
				if strings.HasPrefix(path, bad) {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d files checked", checked)
	}
}
