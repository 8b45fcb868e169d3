package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// FormatPath renders a path as "tasks[2].deps[0].kind". Keys that are not
// plain identifiers are quoted: agents["my.profile"].
func FormatPath(path []any) string { return strictyaml.Path(path).String() }

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := toFloat(v)
		return ok
	case "integer":
		f, ok := toFloat(v)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return false
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case json.Number, float64:
		if hasType(v, "integer") {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil || errors.Is(err, strconv.ErrRange)
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// equalJSON compares two JSON values structurally; numbers compare by value.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalJSON(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number, float64, int:
		fa, _ := toFloat(a)
		fb, ok := toFloat(b)
		return ok && fa == fb
	default:
		return a == b
	}
}

// renderJSON renders a small value for a message.
func renderJSON(v any) string {
	b, err := Canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
