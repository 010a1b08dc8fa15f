package mcpapi

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ainotes/parley/core"
)

// toSchema converts core's schema (a JSON-shaped map) into the SDK's
// schema type directly. Handed a map, Server.AddTool marshals and parses
// every schema again only to check it is an object — most of the MCP
// function's cold start; a *jsonschema.Schema skips that. Only the
// keywords core's generator writes are known here; anything else is an
// error, so a new keyword cannot be dropped in silence.
func toSchema(m core.Schema) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{}
	for k, v := range m {
		var err error
		switch k {
		case "type":
			s.Type, err = str(v)
		case "description":
			s.Description, err = str(v)
		case "pattern":
			s.Pattern, err = str(v)
		case "format":
			s.Format, err = str(v)
		case "$ref":
			s.Ref, err = str(v)
		case "minimum":
			n, ok := v.(int)
			if !ok {
				return nil, fmt.Errorf("minimum %v", v)
			}
			f := float64(n)
			s.Minimum = &f
		case "enum":
			l, ok := v.([]string)
			if !ok {
				return nil, fmt.Errorf("enum %T", v)
			}
			for _, e := range l {
				s.Enum = append(s.Enum, e)
			}
		case "required":
			l, ok := v.([]string)
			if !ok {
				return nil, fmt.Errorf("required %T", v)
			}
			s.Required = l
		case "items":
			s.Items, err = sub(v)
		case "additionalProperties":
			switch v := v.(type) {
			case bool:
				s.AdditionalProperties = &jsonschema.Schema{} // true
				if !v {
					s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}} // false
				}
			default:
				s.AdditionalProperties, err = sub(v)
			}
		case "properties", "$defs":
			mm, ok := v.(core.Schema)
			if !ok {
				return nil, fmt.Errorf("%s %T", k, v)
			}
			out := make(map[string]*jsonschema.Schema, len(mm))
			for name, p := range mm {
				if out[name], err = sub(p); err != nil {
					return nil, err
				}
			}
			if k == "properties" {
				s.Properties = out
			} else {
				s.Defs = out
			}
		case "anyOf":
			l, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("anyOf %T", v)
			}
			for _, e := range l {
				x, err := sub(e)
				if err != nil {
					return nil, err
				}
				s.AnyOf = append(s.AnyOf, x)
			}
		default:
			return nil, fmt.Errorf("schema keyword %q is not converted", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return s, nil
}

func sub(v any) (*jsonschema.Schema, error) {
	m, ok := v.(core.Schema)
	if !ok {
		return nil, fmt.Errorf("a subschema of type %T", v)
	}
	return toSchema(m)
}

func str(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%v is not a string", v)
	}
	return s, nil
}
