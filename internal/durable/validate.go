package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/durable/syntax"
)

// Diagnostic is one finding of rw.validate (see syntax.Diagnostic).
type Diagnostic = syntax.Diagnostic

// diagMap is a diagnostic as rw.validate reports it: col null when
// unknown, severity error unless it says otherwise.
func diagMap(d Diagnostic) map[string]any {
	var col any
	if d.Col > 0 {
		col = d.Col
	}
	sev := d.Severity
	if sev == "" {
		sev = "error"
	}
	return map[string]any{"line": d.Line, "col": col, "message": d.Message, "severity": sev}
}

// ErrPythonUnavailable is returned by a PythonChecker that cannot run.
var ErrPythonUnavailable = errors.New("durable: python3 not available")

// PythonChecker checks Python source syntax.
type PythonChecker interface {
	CheckPython(ctx context.Context, src string) ([]Diagnostic, error)
}

// Python3 checks syntax with "python3 -c 'ast.parse(...)'" at Path, run in
// its own process group and killed with it on cancel or after Timeout
// (default 10s).
type Python3 struct {
	Path    string
	Timeout time.Duration
}

const pythonScript = `import ast, json, sys
src = sys.stdin.buffer.read().decode("utf-8", "replace")
try:
    ast.parse(src)
    print("[]")
except SyntaxError as e:
    print(json.dumps([{"line": e.lineno or 1, "col": e.offset or 0, "message": e.msg or "SyntaxError"}]))
`

// CheckPython implements PythonChecker.
func (p Python3) CheckPython(ctx context.Context, src string) ([]Diagnostic, error) {
	if p.Path == "" {
		return nil, ErrPythonUnavailable
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Path, "-I", "-c", pythonScript)
	ownProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	cmd.Stdin = strings.NewReader(src)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPythonUnavailable, err)
	}
	var raw []struct {
		Line    int    `json:"line"`
		Col     int    `json:"col"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		return nil, fmt.Errorf("%w: bad checker output: %v", ErrPythonUnavailable, err)
	}
	var ds []Diagnostic
	for _, r := range raw {
		ds = append(ds, Diagnostic{Line: r.Line, Col: r.Col, Message: r.Message, Severity: "error"})
	}
	return ds, nil
}

var extFormat = map[string]string{
	".tex": "latex", ".json": "json", ".py": "python", ".yaml": "yaml", ".yml": "yaml",
	".toml": "toml", ".go": "go", ".md": "markdown", ".markdown": "markdown",
}

// ValidateParams are rw.validate's arguments.
type ValidateParams struct {
	Content    string
	FormatHint *string // latex, json, python, yaml, toml, go, markdown
	TargetPath *string // its extension picks the format when there is no hint
}

// Validate checks syntax and always succeeds (ok:true): valid is false when
// there is at least one error; warnings do not invalidate. The format is the
// hint, else the target path's extension, else sniffed ("{"/"[" → json,
// "---" → yaml), else "unknown" (valid, nothing checked).
func (w *Workspace) Validate(ctx context.Context, p ValidateParams) (Result, error) {
	if err := w.allow("rw.validate", ""); err != nil {
		return nil, err
	}
	format := "unknown"
	switch {
	case p.FormatHint != nil:
		format = strings.ToLower(*p.FormatHint)
	case p.TargetPath != nil && extFormat[strings.ToLower(path.Ext(*p.TargetPath))] != "":
		format = extFormat[strings.ToLower(path.Ext(*p.TargetPath))]
	default:
		s := strings.TrimLeft(p.Content, " \t\r\n\f\v")
		if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
			format = "json"
		} else if strings.HasPrefix(s, "---") {
			format = "yaml"
		}
	}
	if format == "md" {
		format = "markdown"
	}
	diags, _ := syntax.Check(format, p.Content)
	unsupported := false
	switch format {
	case "python":
		var err error
		if w.cfg.Python == nil {
			err = ErrPythonUnavailable
		} else {
			diags, err = w.cfg.Python.CheckPython(ctx, p.Content)
		}
		if err != nil {
			unsupported = true
			diags = []Diagnostic{{Line: 1, Message: "python syntax not checked: " + err.Error(), Severity: "warning"}}
		}
	}
	res := diagResult(format, diags)
	if unsupported {
		res["unsupported"] = true
		res["summary"] = "python: unsupported (python3 not available)"
	}
	return res, nil
}

// diagResult builds the validate result and its summary line.
func diagResult(format string, diags []Diagnostic) Result {
	nErr, nWarn := 0, 0
	list := []map[string]any{}
	for _, d := range diags {
		if d.Severity == "warning" {
			nWarn++
		} else {
			nErr++
		}
		list = append(list, diagMap(d))
	}
	summary := format + ": ok"
	switch {
	case nErr > 0 && nWarn > 0:
		summary = fmt.Sprintf("%s: %d error(s), %d warning(s)", format, nErr, nWarn)
	case nErr > 0:
		summary = fmt.Sprintf("%s: %d error(s)", format, nErr)
	case nWarn > 0:
		summary = fmt.Sprintf("%s: %d warning(s)", format, nWarn)
	}
	return Result{"ok": true, "valid": nErr == 0, "format": format, "errors": list, "summary": summary}
}
