package core

import (
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// JSON Schemas of the operations' inputs and outputs, made from the Go
// types (so they cannot drift) in a portable dialect that tools with a
// single-type schema language accept: one type per schema (a value that
// may be null is anyOf [type, null]), enums for kinds, states and rights,
// descriptions from the fields' doc tags, no empty schemas, no $ref but
// to the schema's own $defs (the message tree).

// Schema is a JSON Schema object.
type Schema = map[string]any

// enums are the string types whose values are a closed set.
var enums = map[reflect.Type]func() []string{
	reflect.TypeFor[Kind]():       func() []string { return strs(Acts, func(a Act) string { return string(a.Kind) }) },
	reflect.TypeFor[State]():      func() []string { return strs(AllStates, func(s State) string { return string(s) }) },
	reflect.TypeFor[ClaimState](): func() []string { return strs(ClaimStates, func(s ClaimState) string { return string(s) }) },
	reflect.TypeFor[Right](): func() []string {
		return append(strs(AllRights, func(r Right) string { return string(r) }), string(RightHuman))
	},
	reflect.TypeFor[Origin]():     func() []string { return []string{string(OriginUser), string(OriginLLM)} },
	reflect.TypeFor[AwaitScope](): func() []string { return []string{string(AwaitParty), string(AwaitAny), string(AwaitHuman)} },
	reflect.TypeFor[Confirmer]():  func() []string { return []string{string(ByLock), string(ByHuman)} },
	reflect.TypeFor[Reason]():     func() []string { return strs(Reasons, func(r Reason) string { return string(r) }) },
}

func strs[T any](xs []T, f func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

var refPatterns = map[reflect.Type][2]string{
	reflect.TypeFor[ThreadRef]():  {"^(th_)?[1-9][0-9]{0,14}$", "a thread: th_N (a plain number N is accepted too)"},
	reflect.TypeFor[MessageRef](): {"^(msg_)?[1-9][0-9]{0,14}$", "a message: msg_N (a plain number N is accepted too)"},
	reflect.TypeFor[ClaimRef]():   {"^(cl_)?[1-9][0-9]{0,14}$", "a claim: cl_N (a plain number N is accepted too)"},
}

// defs are the types a schema refers to by $ref, because they nest.
var defs = map[reflect.Type]string{reflect.TypeFor[MessageView](): "message"}

var (
	timeType  = reflect.TypeFor[time.Time]()
	valueType = reflect.TypeFor[jsontext.Value]()
	limitType = reflect.TypeFor[PageLimit]()
)

// jsonType is a parameter's JSON type (and enum) for the manifest.
func jsonType(t reflect.Type) (string, []string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if e, ok := enums[t]; ok {
		return "string", e()
	}
	if _, ok := refPatterns[t]; ok {
		return "string", nil
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Slice:
		return "array", nil
	}
	return "object", nil
}

// generator makes the schema of one root type.
type generator struct {
	input   bool
	profile func(string) bool
	defs    Schema
}

// SchemaOf gives the schema of a type; input schemas refuse unknown
// properties and leave out server-set fields. serves says whether a
// profile is on (fields tagged with another profile are left out).
func SchemaOf(t reflect.Type, input bool, serves func(string) bool) Schema {
	g := &generator{input: input, profile: serves, defs: Schema{}}
	s := g.of(t)
	if len(g.defs) > 0 {
		s["$defs"] = g.defs
	}
	return s
}

func (g *generator) of(t reflect.Type) Schema {
	if t.Kind() == reflect.Pointer {
		return g.of(t.Elem())
	}
	if name, ok := defs[t]; ok {
		if _, done := g.defs[name]; !done {
			g.defs[name] = Schema{} // placeholder: a nested use refers to it
			g.defs[name] = g.object(t)
		}
		return Schema{"$ref": "#/$defs/" + name}
	}
	if e, ok := enums[t]; ok {
		return Schema{"type": "string", "enum": e()}
	}
	if p, ok := refPatterns[t]; ok {
		return Schema{"type": "string", "pattern": p[0], "description": p[1]}
	}
	switch {
	case t == timeType:
		return Schema{"type": "string", "format": "date-time"}
	case t == limitType:
		return Schema{"type": "integer", "minimum": 1}
	}
	switch t.Kind() {
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return Schema{"type": "integer"}
	case reflect.Float64:
		return Schema{"type": "number"}
	case reflect.Slice:
		return Schema{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return Schema{"type": "object", "additionalProperties": true}
		}
		return Schema{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		return g.object(t)
	}
	return Schema{"type": "object", "additionalProperties": true}
}

// object describes a struct: embedded structs are flattened; a pointer
// field without omitempty may be null; required are the fields an output
// always has, or an input's `required` tags.
func (g *generator) object(t reflect.Type) Schema {
	props := Schema{}
	var req []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if name == "-" || f.Type == valueType || f.Tag.Get("ignored") == "true" {
				continue
			}
			if p := f.Tag.Get("profile"); p != "" && g.profile != nil && !g.profile(p) {
				continue
			}
			if name == "" {
				name = f.Name
			}
			s := g.of(f.Type)
			omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			if !g.input && f.Type.Kind() == reflect.Pointer && !omit {
				s = Schema{"anyOf": []any{s, Schema{"type": "null"}}}
			}
			if d := f.Tag.Get("doc"); d != "" {
				s["description"] = d
			}
			props[name] = s
			if (g.input && f.Tag.Get("required") == "true") || (!g.input && !omit) {
				req = append(req, name)
			}
		}
	}
	walk(t)
	s := Schema{"type": "object", "properties": props}
	if len(req) > 0 {
		s["required"] = req
	}
	if g.input {
		s["additionalProperties"] = false
	}
	return s
}

// refusalSchema is {"error":{"reason","message","detail"}}, the shape of
// every refusal on both transports.
func refusalSchema() Schema {
	return Schema{
		"type": "object",
		"properties": Schema{"error": Schema{
			"type": "object",
			"properties": Schema{
				"reason":  Schema{"type": "string", "enum": strs(Reasons, func(r Reason) string { return string(r) }), "description": "stable, machine-readable"},
				"message": Schema{"type": "string", "description": "for people"},
				"detail":  Schema{"type": "object", "additionalProperties": true, "description": "for programs: field, limit, retry_after_s, request_id, …"},
			},
			"required":             []string{"reason", "message", "detail"},
			"additionalProperties": false,
		}},
		"required":             []string{"error"},
		"additionalProperties": false,
	}
}

// OperationSchemas are an operation's published schemas: its input, and
// its output as either the result or a refusal.
type OperationSchemas struct {
	In, Out Schema
}

var schemaCache sync.Map // "<profiles>/<op>" → OperationSchemas

// Schemas gives an operation's schemas for this instance.
func (s *Service) Schemas(op *Operation) OperationSchemas {
	key := op.Name
	if s.dialectic {
		key += "/dialectic"
	}
	if v, ok := schemaCache.Load(key); ok {
		return v.(OperationSchemas)
	}
	in := SchemaOf(op.In, true, s.serves)
	out := SchemaOf(op.Out, false, s.serves)
	outDefs := out["$defs"]
	delete(out, "$defs")
	both := Schema{"type": "object", "anyOf": []any{out, refusalSchema()}}
	if outDefs != nil {
		both["$defs"] = outDefs
	}
	v := OperationSchemas{In: in, Out: both}
	schemaCache.Store(key, v)
	return v
}
