package mcpapi

import (
	"testing"

	"github.com/ainotes/parley/core"
)

// A keyword the converter does not know is an error, not a silent loss.
// (That every operation's schemas convert to the same JSON is
// TestToolSchemasAreCoreSchemas, over the wire.)
func TestSchemaConversionRefusesUnknownKeywords(t *testing.T) {
	for _, s := range []core.Schema{
		{"type": "object", "oneOf": []any{}},
		{"type": "object", "properties": core.Schema{"x": core.Schema{"const": 1}}},
		{"type": 3},
	} {
		if _, err := toSchema(s); err == nil {
			t.Errorf("%v was converted", s)
		}
	}
}
