package mcpserver

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/apiary-dev/apiary/internal/durable"
)

// param types.
const (
	tString  = "string"
	tInteger = "integer"
	tBoolean = "boolean"
	tObject  = "object"
	tAny     = "any"
)

// param declares one tool argument. The input schema is generated from it,
// and parseArgs checks presence and JSON type. Value checks (enums,
// patterns, ranges) are left to durable, which answers with Resilient
// Write's exact reasons; the schema still advertises them to clients.
type param struct {
	name     string
	typ      string
	required bool
	desc     string
	enum     []string
	def      any
	pattern  string
	min, max *int
}

func intp(i int) *int { return &i }

// args are a call's arguments after parseArgs: present, non-null keys with
// their raw JSON values of the declared types.
type args map[string]json.RawMessage

func inputErr(why string, ctx map[string]any) *durable.Error {
	if ctx == nil {
		ctx = map[string]any{}
	}
	ctx["reason"] = why
	return &durable.Error{Kind: durable.KindPolicyViolation, Reason: durable.ReasonEncoding, Action: durable.ActionAbort, Context: ctx}
}

// parseArgs validates raw arguments against the declared params: an object,
// no unknown keys (every RW schema has additionalProperties:false), required
// keys present, and values of the declared JSON type. null counts as
// absent. Failures are policy_violation/encoding envelopes, never protocol
// errors.
func parseArgs(params []param, raw json.RawMessage) (args, *durable.Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return nil, inputErr("arguments_must_be_an_object", nil)
	}
	m, err := splitObject(raw)
	if err != nil {
		return nil, inputErr("arguments_must_be_an_object", nil)
	}
	return checkArgs(params, m)
}

// checkArgs validates arguments already split into raw values.
func checkArgs(params []param, m map[string]json.RawMessage) (args, *durable.Error) {
	a := args{}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	for k := range m {
		if !slices.Contains(names, k) {
			return nil, inputErr("unexpected_argument", map[string]any{"argument": k, "allowed": names})
		}
	}
	for _, p := range params {
		v, ok := m[p.name]
		v = bytes.TrimSpace(v)
		if ok && string(v) == "null" {
			ok = false
		}
		if !ok {
			if p.required {
				return nil, inputErr("missing_required_argument", map[string]any{"argument": p.name})
			}
			continue
		}
		if !hasType(v, p.typ) {
			return nil, inputErr("argument_must_be_"+p.typ, map[string]any{"argument": p.name, "expected": p.typ})
		}
		a[p.name] = v
	}
	return a, nil
}

// hasType reports whether the JSON value v has type typ. An integer is any
// JSON number without a fractional part (1, 1.0, 1e2: JSON Schema's
// integer), within the range of an int.
func hasType(v json.RawMessage, typ string) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch typ {
	case tAny:
		return true
	case tString:
		return v[0] == '"'
	case tBoolean:
		return string(v) == "true" || string(v) == "false"
	case tObject:
		return v[0] == '{'
	case tInteger:
		_, ok := jsonInteger(v)
		return ok
	}
	return false
}

// jsonInteger reads a JSON number with no fractional part as an int.
func jsonInteger(v []byte) (int, bool) {
	if i, err := strconv.Atoi(string(v)); err == nil {
		return i, true
	}
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

func (a args) has(name string) bool { _, ok := a[name]; return ok }

// str returns a string argument ("" if absent), unescaped once.
func (a args) str(name string) string {
	v, ok := a[name]
	if !ok {
		return ""
	}
	s, ok := unquote(v)
	if !ok {
		json.Unmarshal(v, &s)
	}
	return s
}

// optStr returns a string argument or nil.
func (a args) optStr(name string) *string {
	if !a.has(name) {
		return nil
	}
	s := a.str(name)
	return &s
}

// optInt returns an integer argument or nil.
func (a args) optInt(name string) *int {
	v, ok := a[name]
	if !ok {
		return nil
	}
	i, _ := jsonInteger(bytes.TrimSpace(v))
	return &i
}

// integer returns an integer argument (0 if absent).
func (a args) integer(name string) int {
	if p := a.optInt(name); p != nil {
		return *p
	}
	return 0
}

// boolean returns a boolean argument or def.
func (a args) boolean(name string, def bool) bool {
	v, ok := a[name]
	if !ok {
		return def
	}
	return string(bytes.TrimSpace(v)) == "true"
}

// optBool returns a boolean argument or nil.
func (a args) optBool(name string) *bool {
	if !a.has(name) {
		return nil
	}
	b := a.boolean(name, false)
	return &b
}

// raw returns an argument's JSON text.
func (a args) raw(name string) []byte { return a[name] }
