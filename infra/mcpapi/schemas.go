package mcpapi

import (
	_ "embed"
	"encoding/json"
)

// The tools' JSON schemas are inferred from the Go types by schemaFor, but
// not at start-up: inference and validation by reflection took ~5 ms of a
// Lambda's cold start. They are generated into schemas.json (a test checks
// that the file matches the types; -update rewrites it) and embedded.
//
//go:embed schemas.json
var schemasJSON []byte

type toolSchemas struct {
	In  json.RawMessage `json:"input"`
	Out json.RawMessage `json:"output"`
}

func embeddedSchemas() (map[string]toolSchemas, error) {
	var m map[string]toolSchemas
	err := json.Unmarshal(schemasJSON, &m)
	return m, err
}

// generateSchemas infers every tool's schemas, for schemas.json.
func generateSchemas() (map[string]toolSchemas, error) {
	a := &API{}
	out := map[string]toolSchemas{}
	for _, t := range append(a.tools(), a.claimTools()...) {
		in, err := schemaFor(t.in)
		if err != nil {
			return nil, err
		}
		o, err := schemaFor(t.out)
		if err != nil {
			return nil, err
		}
		inRaw, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		outRaw, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		out[t.name] = toolSchemas{In: inRaw, Out: outRaw}
	}
	return out, nil
}
