package llmfake

import (
	"encoding/json"
	"sort"
	"strings"
)

// JSON mode: a request that asks for JSON output (Gemini's
// generationConfig.responseMimeType "application/json", with a
// responseJsonSchema or responseSchema) gets, when no script answers it, a
// JSON value valid for the schema instead of filler text. Gemini CLI's model
// router parses such an answer and retries with backoff when it cannot.

// maxSchemaDepth bounds the nesting followed in a schema, and
// maxSchemaValues the values generated (nested minItems multiply).
const (
	maxSchemaDepth  = 32
	maxSchemaValues = 4096
)

// schemaExample returns a small value valid for a JSON Schema (or the
// OpenAPI subset Gemini accepts, whose type names are upper case). A
// schema it cannot read yields an empty object.
func schemaExample(raw json.RawMessage) []byte {
	var s any
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return []byte("{}")
	}
	budget := maxSchemaValues
	b, err := json.Marshal(exampleOf(s, 0, &budget))
	if err != nil {
		return []byte("{}")
	}
	return b
}

func exampleOf(v any, depth int, budget *int) any {
	s, ok := v.(map[string]any)
	if !ok || depth > maxSchemaDepth || *budget <= 0 {
		return nil
	}
	*budget--
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			return exampleOf(alts[0], depth+1, budget)
		}
	}
	switch schemaType(s) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			out[k] = exampleOf(props[k], depth+1, budget)
		}
		return out
	case "array":
		n := 1
		if m, ok := s["minItems"].(float64); ok && int(m) > n {
			n = min(int(m), 16)
		}
		items := make([]any, n)
		for i := range items {
			items[i] = exampleOf(s["items"], depth+1, budget)
		}
		return items
	case "integer":
		return float64(int64(number(s)))
	case "number":
		return number(s)
	case "boolean":
		return true
	case "null":
		return nil
	default:
		str := "example"
		if m, ok := s["minLength"].(float64); ok && int(m) > len(str) {
			str = strings.Repeat("x", min(int(m), 1<<12))
		}
		return str
	}
}

// schemaType is the schema's type in lower case: the first non-null one of
// a list; guessed from its keywords when absent.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return strings.ToLower(t)
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok && strings.ToLower(n) != "null" {
				return strings.ToLower(n)
			}
		}
		return "null"
	}
	switch {
	case s["properties"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	}
	return "string"
}

// number picks a value within the schema's bounds: its minimum, else 1
// (or its maximum when that is below 1).
func number(s map[string]any) float64 {
	if m, ok := s["minimum"].(float64); ok {
		return m
	}
	if m, ok := s["maximum"].(float64); ok && m < 1 {
		return m
	}
	return 1
}
