// Package strictyaml reads one YAML document strictly and locates every
// problem in it, for the files apiary reads from people and models:
// apiary.yaml, plans, eval task sets, llmfake scripts, agents files.
//
// Parse checks what YAML itself lets through: a file holds one document,
// a mapping key appears once, keys are scalars, tags are the standard
// ones, numbers are finite, aliases expand to a bounded number of values
// and never to themselves, nesting is bounded, the text is valid UTF-8 (a
// leading byte-order mark is dropped) and no longer than a limit. It
// resolves anchors, aliases and merge keys ("<<: *defaults"; explicit keys
// win) into a plain tree that remembers where each value was written.
//
// The resulting Document can be decoded into Go values (Decode: unknown
// fields and wrong types are errors, every one of them reported), turned
// into the generic tree JSON Schema validation works on (Value), and asked
// where a field path was written (Pos), so that checks made after
// decoding can point at the line and column too. ParseJSON builds the same
// Document from strict JSON, for files that may be either.
//
// Every problem is an *Error naming the file, line, column and field path
// ("plan.yaml:12:7: tasks[2].deps[0]: ..."); several are returned together
// as Errors. Each wraps one of the sentinel errors below.
package strictyaml

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Classes of problems; every *Error wraps one.
var (
	// ErrSyntax: not YAML (or JSON), not UTF-8, more than one document, a
	// non-scalar or null mapping key, an unsupported tag, a number that is
	// not finite, an alias that contains itself.
	ErrSyntax = errors.New("strictyaml: syntax error")
	// ErrLimit: the file, its nesting or its alias expansion is too big.
	ErrLimit = errors.New("strictyaml: limit exceeded")
	// ErrDuplicateKey: a mapping gives a key twice.
	ErrDuplicateKey = errors.New("strictyaml: duplicate key")
	// ErrUnknownField: Decode met a key its struct has no field for.
	ErrUnknownField = errors.New("strictyaml: unknown field")
	// ErrType: Decode met a value of the wrong type for its field.
	ErrType = errors.New("strictyaml: wrong type")
)

// Defaults of Options.
const (
	DefaultMaxBytes      = 8 << 20
	DefaultMaxDepth      = 64
	DefaultMaxAliasNodes = 1 << 20
)

// maxErrors bounds the problems reported for one document.
const maxErrors = 100

// Options bound what Parse and ParseJSON accept. The zero value means the
// defaults.
type Options struct {
	// MaxBytes is the largest file accepted; 0 means DefaultMaxBytes.
	MaxBytes int
	// MaxDepth bounds the nesting of mappings and lists; 0 means
	// DefaultMaxDepth.
	MaxDepth int
	// MaxAliasNodes bounds the values that aliases and merge keys may
	// expand to (an "alias bomb" expands exponentially); 0 means
	// DefaultMaxAliasNodes. The document's own values are bounded by
	// MaxBytes.
	MaxAliasNodes int
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxAliasNodes <= 0 {
		o.MaxAliasNodes = DefaultMaxAliasNodes
	}
	return o
}

// Pos is a place in a file: 1-based line and column (in bytes). Zero
// fields mean unknown.
type Pos struct {
	Line   int
	Column int
}

// Path locates a value in a document: each element is a string (a mapping
// key) or an int (a list index).
type Path []any

// String renders the path as "tasks[2].deps[0].kind". Keys that are not
// plain identifiers are quoted: agents["my.profile"].
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		switch e := e.(type) {
		case int:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e))
			b.WriteByte(']')
		case string:
			if plainKey(e) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(e)
			} else {
				b.WriteByte('[')
				b.WriteString(strconv.Quote(e))
				b.WriteByte(']')
			}
		}
	}
	return b.String()
}

// Pointer renders the path as a JSON Pointer (RFC 6901): "/tasks/2/deps/0".
func (p Path) Pointer() string {
	var b strings.Builder
	for _, e := range p {
		b.WriteByte('/')
		switch e := e.(type) {
		case int:
			b.WriteString(strconv.Itoa(e))
		case string:
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(e, "~", "~0"), "/", "~1"))
		}
	}
	return b.String()
}

func plainKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Error is one problem at a place in a file.
type Error struct {
	File string
	Pos         // Line 0: not tied to a line; Column 0: unknown
	Path Path   // empty for the whole document
	Err  error  // the class: ErrSyntax, ErrType, ...
	Msg  string // what is wrong, without the location
}

// Error renders "file:line:col: path: msg", leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if p := e.Path.String(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the class.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem found, in the order found.
type Errors []*Error

// Error renders one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is and errors.As see each problem.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// collector gathers a bounded list of problems.
type collector struct {
	file string
	errs Errors
}

func (c *collector) add(at Pos, path Path, class error, format string, args ...any) {
	if len(c.errs) >= maxErrors {
		return
	}
	c.errs = append(c.errs, &Error{File: c.file, Pos: at, Path: slices.Clone(path), Err: class, Msg: fmt.Sprintf(format, args...)})
}

func (c *collector) full() bool { return len(c.errs) >= maxErrors }

func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs
}
