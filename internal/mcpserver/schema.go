package mcpserver

import (
	"github.com/apiary-dev/apiary/internal/durable"
)

// inputSchema renders params as an object JSON Schema (2020-12) with
// additionalProperties:false, like every Resilient Write tool.
func inputSchema(params []param) map[string]any {
	props := map[string]any{}
	var required []string
	for _, p := range params {
		s := map[string]any{"type": p.typ}
		if p.typ == tAny {
			s["type"] = anyJSON
		}
		if p.desc != "" {
			s["description"] = p.desc
		}
		if len(p.enum) > 0 {
			s["enum"] = p.enum
		}
		if p.def != nil {
			s["default"] = p.def
		}
		if p.pattern != "" {
			s["pattern"] = p.pattern
		}
		if p.min != nil {
			s["minimum"] = *p.min
		}
		if p.max != nil {
			s["maximum"] = *p.max
		}
		props[p.name] = s
		if p.required {
			required = append(required, p.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// field types of success results.
var (
	oString  = map[string]any{"type": "string"}
	oInteger = map[string]any{"type": "integer"}
	oNumber  = map[string]any{"type": "number"}
	oBoolean = map[string]any{"type": "boolean"}
	oArray   = map[string]any{"type": "array"}
	oObject  = map[string]any{"type": "object"}
	oAny     = map[string]any{"type": anyJSON}
)

// anyJSON spells "any JSON value" as an explicit type list, so schema
// checkers see a deliberate contract rather than an empty schema.
var anyJSON = []string{"object", "array", "string", "number", "boolean", "null"}

func oNullable(typ string) map[string]any { return map[string]any{"type": []string{typ, "null"}} }

// envelopeSchema is Resilient Write's spec/errors.schema.json.
func envelopeSchema() map[string]any {
	enum := func(vals ...string) map[string]any { return map[string]any{"type": "string", "enum": vals} }
	kinds := make([]string, len(durable.Kinds))
	for i, k := range durable.Kinds {
		kinds[i] = string(k)
	}
	reasons := make([]string, len(durable.Reasons))
	for i, r := range durable.Reasons {
		reasons[i] = string(r)
	}
	actions := make([]string, len(durable.Actions))
	for i, a := range durable.Actions {
		actions[i] = string(a)
	}
	return map[string]any{
		"title":                "resilient-write L3 error envelope",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"ok", "schema_version", "error", "reason_hint", "detected_patterns", "suggested_action", "retry_budget", "context"},
		"properties": map[string]any{
			"ok":                map[string]any{"type": "boolean", "const": false},
			"schema_version":    map[string]any{"type": "string", "const": durable.SchemaVersion},
			"error":             enum(kinds...),
			"reason_hint":       enum(reasons...),
			"detected_patterns": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"suggested_action":  enum(actions...),
			"retry_budget":      map[string]any{"type": "integer", "minimum": 0},
			"context":           map[string]any{"type": "object", "additionalProperties": true},
		},
	}
}

// outputSchema is anyOf[the tool's success object, the error envelope]:
// structuredContent is always one of the two.
func outputSchema(success map[string]any) map[string]any {
	props := map[string]any{"ok": map[string]any{"type": "boolean", "const": true}}
	for k, v := range success {
		props[k] = v
	}
	ok := map[string]any{"type": "object", "required": []string{"ok"}, "properties": props}
	return map[string]any{"type": "object", "anyOf": []any{ok, envelopeSchema()}}
}
