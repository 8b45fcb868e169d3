package plan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Classes of plan errors; each *FieldError wraps one. Test with errors.Is on
// the error Parse or CheckRepo returns.
var (
	ErrSyntax       = errors.New("plan: syntax error")
	ErrSchema       = errors.New("plan: schema violation")
	ErrBadID        = errors.New("plan: bad task id")
	ErrDuplicateID  = errors.New("plan: duplicate task id")
	ErrUnknownDep   = errors.New("plan: unknown dependency")
	ErrUnknownAgent = errors.New("plan: unknown agent")
	ErrCycle        = errors.New("plan: dependency cycle")
	ErrScopeEscape  = errors.New("plan: path escapes the repository")
	ErrInvalid      = errors.New("plan: invalid value")
	ErrDirtyTree    = errors.New("plan: working tree has uncommitted changes")
	ErrNoBranch     = errors.New("plan: integration branch missing")
)

// FieldError is one problem in a plan, located by file, line, column and
// field path ("tasks[2].deps[0]"; empty for the whole document).
type FieldError struct {
	File   string
	Line   int // 1-based; 0 when not tied to a line
	Column int
	Path   string
	Err    error // the class: ErrCycle, ErrUnknownDep, ...
	Msg    string
}

// Error renders "plan.yaml:12:7: tasks[2].deps[0]: unknown task \"x\"".
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *FieldError) Unwrap() error { return e.Err }

// Errors is every problem found in a plan, ordered by position.
type Errors []*FieldError

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

// sortErrors orders errors by line, then column, then path.
func sortErrors(errs []*FieldError) {
	slices.SortStableFunc(errs, func(x, y *FieldError) int {
		return cmp.Or(cmp.Compare(x.Line, y.Line), cmp.Compare(x.Column, y.Column), cmp.Compare(x.Path, y.Path))
	})
}
