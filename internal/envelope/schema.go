package envelope

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

//go:embed schema/*.json
var schemaFS embed.FS

// Schema names, as in schema/<name>.json.
const (
	SchemaPlan     = "plan"
	SchemaEnvelope = "envelope"
	SchemaReceipt  = "receipt"
)

// SchemaNames lists the embedded schemas.
func SchemaNames() []string { return []string{SchemaPlan, SchemaEnvelope, SchemaReceipt} }

// SchemaSource returns the JSON text of an embedded schema.
func SchemaSource(name string) ([]byte, error) {
	b, err := schemaFS.ReadFile("schema/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("%w: no schema %q", ErrSchemaInvalid, name)
	}
	return b, nil
}

// compiled holds the embedded schemas, compiled once on first use. It is
// immutable after that, like a package-level regexp.
var compiled = sync.OnceValues(func() (map[string]*Schema, error) {
	out := map[string]*Schema{}
	for _, n := range SchemaNames() {
		src, err := SchemaSource(n)
		if err != nil {
			return nil, err
		}
		if out[n], err = CompileSchema(n, src); err != nil {
			return nil, err
		}
	}
	return out, nil
})

// LookupSchema returns the compiled embedded schema called name (SchemaPlan,
// SchemaEnvelope or SchemaReceipt).
func LookupSchema(name string) (*Schema, error) {
	m, err := compiled()
	if err != nil {
		return nil, err
	}
	s, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("%w: no schema %q", ErrSchemaInvalid, name)
	}
	return s, nil
}

// ValidationError lists every way a document fails its schema. It wraps
// ErrInvalid.
type ValidationError struct {
	Schema     string // "envelope", "receipt", "plan"
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid %s: ", e.Schema)
	for i, v := range e.Violations {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Violations)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// ValidateDocument validates a decoded document (see ParseJSON) against the
// named schema; it returns nil or a *ValidationError.
func ValidateDocument(schema string, doc any) error {
	s, err := LookupSchema(schema)
	if err != nil {
		return err
	}
	if vs := s.Validate(doc); len(vs) > 0 {
		return &ValidationError{Schema: schema, Violations: vs}
	}
	return nil
}

// encode validates v against schema and returns its canonical encoding.
func encode(schema string, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	doc, err := ParseJSON(raw)
	if err != nil {
		return nil, err
	}
	if err := ValidateDocument(schema, doc); err != nil {
		return nil, err
	}
	return Canonical(doc)
}

// decode parses data, validates it against schema and unmarshals it into v.
func decode(schema string, data []byte, v any) error {
	doc, err := ParseJSON(data)
	if err != nil {
		return err
	}
	if err := ValidateDocument(schema, doc); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// The schema accepted it, so this is a range error (an integer
		// beyond int64, say).
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// EncodeEnvelope validates e and returns its canonical JSON encoding.
func EncodeEnvelope(e *Envelope) ([]byte, error) {
	c := *e
	c.Deps = nonNil(c.Deps)
	c.Authority.WriteScope = nonNil(c.Authority.WriteScope)
	if c.Completion.Forbidden == nil {
		c.Completion.Forbidden = BuiltinPatterns()
	}
	if c.Reconcile != nil {
		rc := *c.Reconcile
		rc.Paths = nonNil(rc.Paths)
		c.Reconcile = &rc
	}
	return encode(SchemaEnvelope, &c)
}

// DecodeEnvelope parses and validates an envelope.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	var e Envelope
	if err := decode(SchemaEnvelope, data, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// EncodeReceipt validates r and returns its canonical JSON encoding. A
// summary longer than MaxSummary characters is an error, not truncated:
// callers bound it with TruncateSummary.
func EncodeReceipt(r *Receipt) ([]byte, error) {
	c := *r
	c.ChangedPaths = nonNil(c.ChangedPaths)
	c.Checks = nonNil(c.Checks)
	return encode(SchemaReceipt, &c)
}

// DecodeReceipt parses and validates a receipt.
func DecodeReceipt(data []byte) (*Receipt, error) {
	var r Receipt
	if err := decode(SchemaReceipt, data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// TruncateSummary bounds s to MaxSummary characters, marking the cut.
func TruncateSummary(s string) string {
	r := []rune(s)
	if len(r) <= MaxSummary {
		return s
	}
	return string(r[:MaxSummary-1]) + "…"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
