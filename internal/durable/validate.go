package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// Diagnostic is one finding of rw.validate. Col is 1-based in characters, 0
// when unknown (reported as null).
type Diagnostic struct {
	Line     int
	Col      int
	Message  string
	Severity string // error or warning
}

func (d Diagnostic) toMap() map[string]any {
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
	var diags []Diagnostic
	unsupported := false
	switch format {
	case "latex":
		diags = validateLatex(p.Content)
	case "json":
		diags = validateJSON(p.Content)
	case "yaml":
		diags = validateYAML(p.Content)
	case "toml":
		diags = validateTOML(p.Content)
	case "go":
		diags = validateGo(p.Content)
	case "markdown":
		diags = validateMarkdown(p.Content)
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
		list = append(list, d.toMap())
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

// lineCol converts a byte offset of s to a 1-based line and character column.
func lineCol(s string, off int) (int, int) {
	off = max(0, min(off, len(s)))
	line := 1 + strings.Count(s[:off], "\n")
	start := strings.LastIndexByte(s[:off], '\n') + 1
	return line, utf8.RuneCountInString(s[start:off]) + 1
}

func validateJSON(s string) []Diagnostic {
	var v any
	err := json.Unmarshal([]byte(s), &v)
	if err == nil {
		return nil
	}
	off := len(s)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
		if off > 0 {
			off-- // Offset counts the offending byte
		}
	}
	line, col := lineCol(s, off)
	return []Diagnostic{{Line: line, Col: col, Message: err.Error(), Severity: "error"}}
}

var (
	yamlLine     = regexp.MustCompile(`line (\d+)`)
	yamlLinePart = regexp.MustCompile(`line \d+: `)
)

// yamlParse decodes every document of s and returns the first error.
func yamlParse(s string) error {
	dec := yaml.NewDecoder(strings.NewReader(s))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func validateYAML(s string) []Diagnostic {
	err := yamlParse(s)
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, col := 1, 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	if l, c, ok := locateYAML(s, msg); ok {
		line, col = l, c
	}
	return []Diagnostic{{Line: line, Col: col, Message: msg, Severity: "error"}}
}

// Bounds of locateYAML's search.
const (
	yamlLocateMax     = 64 << 10
	yamlLocateLineMax = 512
)

// locateYAML finds where a YAML error is, as libyaml's problem mark (and so
// PyYAML) reports it: yaml.v3 names only the line of the enclosing
// construct, and no column. The error is where the shortest prefix of the
// document first fails with the same message: the first such line (found
// by bisection), then the first such character in it. A prefix of a flow
// collection is closed first, so that the end of the prefix is not what
// fails; an error that closing the collections cures, or one at the end of
// the stream, is at the end. Documents above 64 KiB keep yaml.v3's line.
func locateYAML(s, msg string) (line, col int, ok bool) {
	if len(s) > yamlLocateMax {
		return 0, 0, false
	}
	key := yamlLinePart.ReplaceAllString(msg, "")
	flow := strings.Contains(key, "',' or")
	same := func(prefix string) bool {
		if flow {
			prefix += flowClosers(prefix)
		}
		err := yamlParse(prefix)
		return err != nil && yamlLinePart.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), "") == key
	}
	if strings.Contains(key, "end of stream") || !same(s) {
		l, c := lineCol(s, len(s))
		return l, c, true
	}
	lines := strings.SplitAfter(s, "\n")
	lo, hi := 1, len(lines)
	for lo < hi {
		mid := (lo + hi) / 2
		if same(strings.Join(lines[:mid], "")) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	base := strings.Join(lines[:lo-1], "")
	text := lines[lo-1]
	if len(text) > yamlLocateLineMax {
		return lo, 0, true
	}
	c, lastInk := 0, 0
	for i, r := range text {
		c++
		if same(base + text[:i+utf8.RuneLen(r)]) {
			if (r == ' ' || r == '\t') && lastInk > 0 {
				// The token before needed the blank to be recognised
				// (": " is a value indicator): the error is that token.
				return lo, lastInk, true
			}
			return lo, c, true
		}
		if r != ' ' && r != '\t' {
			lastInk = c
		}
	}
	return lo, 0, true
}

// flowClosers returns the brackets that close the flow collections left
// open at the end of s (quoted scalars and comments skipped).
func flowClosers(s string) string {
	var stack []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '[', '{':
			stack = append(stack, c)
		case ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case '\'':
			for i++; i < len(s); i++ {
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '#':
			if i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n' {
				for i < len(s) && s[i] != '\n' {
					i++
				}
			}
		}
	}
	out := make([]byte, 0, len(stack))
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '[' {
			out = append(out, ']')
		} else {
			out = append(out, '}')
		}
	}
	return string(out)
}

func validateTOML(s string) []Diagnostic {
	var v any
	_, err := toml.Decode(s, &v)
	if err == nil {
		return nil
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return []Diagnostic{{Line: max(1, pe.Position.Line), Col: pe.Position.Col, Message: pe.Message, Severity: "error"}}
	}
	return []Diagnostic{{Line: 1, Message: err.Error(), Severity: "error"}}
}

func validateGo(s string) []Diagnostic {
	fset := token.NewFileSet()
	_, err := parser.ParseFile(fset, "input.go", s, parser.AllErrors)
	if err == nil {
		return nil
	}
	var list scanner.ErrorList
	if !errors.As(err, &list) {
		return []Diagnostic{{Line: 1, Message: err.Error(), Severity: "error"}}
	}
	var ds []Diagnostic
	for i, e := range list {
		if i == 20 {
			break
		}
		ds = append(ds, Diagnostic{Line: e.Pos.Line, Col: e.Pos.Column, Message: e.Msg, Severity: "error"})
	}
	return ds
}

// validateMarkdown reports code fences (``` or ~~~, up to three spaces of
// indent) left open at the end of the document.
func validateMarkdown(s string) []Diagnostic {
	var open byte
	openLen, openLine := 0, 0
	for i, line := range splitLines(s) {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
			continue
		}
		c := t[0]
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n < 3 {
			continue
		}
		switch {
		case open == 0:
			if c == '`' && strings.ContainsRune(t[n:], '`') {
				continue // not a fence: backticks in the info string
			}
			open, openLen, openLine = c, n, i+1
		case c == open && n >= openLen && strings.TrimSpace(t[n:]) == "":
			open = 0
		}
	}
	if open != 0 {
		return []Diagnostic{{Line: openLine, Col: 1, Message: fmt.Sprintf("code fence opened at line %d is never closed", openLine), Severity: "error"}}
	}
	return nil
}

// splitLines splits on \n, \r\n and \r, without a trailing empty line.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
