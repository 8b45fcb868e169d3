// Package syntax holds the shallow syntax checks of rw.validate: JSON,
// YAML, TOML, Go, Markdown and LaTeX (Resilient Write's rules), each a pure
// function of the text that reports every problem with its line and
// column. Python is checked by a python3 process, which the durable
// package runs.
package syntax

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// Diagnostic is one finding. Col is 1-based in characters, 0 when unknown.
type Diagnostic struct {
	Line     int
	Col      int
	Message  string
	Severity string // error or warning
}

// Check checks src as format (latex, json, yaml, toml, go or markdown);
// checked is false for any other format, which is not looked at.
func Check(format, src string) (diags []Diagnostic, checked bool) {
	switch format {
	case "latex":
		return validateLatex(src), true
	case "json":
		return validateJSON(src), true
	case "yaml":
		return validateYAML(src), true
	case "toml":
		return validateTOML(src), true
	case "go":
		return validateGo(src), true
	case "markdown":
		return validateMarkdown(src), true
	}
	return nil, false
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
		// The rune's width in the text: an invalid byte is one, though
		// it reads as U+FFFD, which takes three.
		_, size := utf8.DecodeRuneInString(text[i:])
		if same(base + text[:i+size]) {
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
