package syntax

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

var (
	latexEnv      = regexp.MustCompile(`\\(begin|end)\{([^}]*)\}`)
	latexTypo     = regexp.MustCompile(`\\being\b`)
	latexScheme   = regexp.MustCompile(`(?:https?|ftp)://`)
	latexSuppress = regexp.MustCompile(`\\(texttt|verb|url|href|lstinline)\b`)
	latexDocclass = regexp.MustCompile(`\\documentclass`)
	latexBeginDoc = regexp.MustCompile(`\\begin\{document\}`)
	latexEndDoc   = regexp.MustCompile(`\\end\{document\}`)
)

// validateLatex runs Resilient Write's shallow LaTeX checks: brace balance,
// environment nesting (errors); missing document structure, the \being
// typo, unescaped % in URLs and bare _ outside math (warnings).
func validateLatex(s string) []Diagnostic {
	lines := splitLines(s)
	var ds []Diagnostic
	ds = append(ds, latexBraces(s, lines)...)
	ds = append(ds, latexEnvironments(s)...)
	for _, c := range []struct {
		re  *regexp.Regexp
		msg string
	}{{latexDocclass, `\documentclass not found`}, {latexBeginDoc, `\begin{document} not found`}, {latexEndDoc, `\end{document} not found`}} {
		if !c.re.MatchString(s) {
			ds = append(ds, Diagnostic{Line: 1, Message: c.msg, Severity: "warning"})
		}
	}
	for i, line := range lines {
		for _, m := range latexTypo.FindAllStringIndex(line, -1) {
			ds = append(ds, Diagnostic{Line: i + 1, Col: charCol(line, m[0]), Message: `Probable typo: \being (did you mean \begin?)`, Severity: "warning"})
		}
	}
	for i, line := range lines {
		for _, pct := range urlPercents(line) {
			ds = append(ds, Diagnostic{Line: i + 1, Col: charCol(line, pct), Message: `Unescaped '%' in URL (use \% in LaTeX)`, Severity: "warning"})
		}
	}
	for i, line := range lines {
		if latexSuppress.MatchString(line) || strings.Contains(line, "$") || strings.HasPrefix(strings.TrimLeft(line, " \t"), "%") {
			continue
		}
		for j := 0; j < len(line); j++ {
			if line[j] == '_' && (j == 0 || line[j-1] != '\\') {
				ds = append(ds, Diagnostic{Line: i + 1, Col: charCol(line, j), Message: `Unescaped '_' outside math mode (use \_)`, Severity: "warning"})
			}
		}
	}
	return ds
}

// charCol is the 1-based character column of byte offset off in line.
func charCol(line string, off int) int { return utf8.RuneCountInString(line[:off]) + 1 }

func latexBraces(s string, lines []string) []Diagnostic {
	var ds []Diagnostic
	depth := 0
	for i, line := range lines {
		for j := 0; j < len(line); j++ {
			switch line[j] {
			case '{':
				depth++
			case '}':
				depth--
				if depth < 0 {
					ds = append(ds, Diagnostic{Line: i + 1, Message: "Unexpected closing brace '}'", Severity: "error"})
					depth = 0
				}
			}
		}
	}
	if depth > 0 {
		ds = append(ds, Diagnostic{Line: strings.Count(s, "\n") + 1, Message: fmt.Sprintf("Unclosed braces: %d still open at end of file", depth), Severity: "error"})
	}
	return ds
}

func latexEnvironments(s string) []Diagnostic {
	type open struct {
		env  string
		line int
	}
	var ds []Diagnostic
	var stack []open
	for _, m := range latexEnv.FindAllStringSubmatchIndex(s, -1) {
		kind, env := s[m[2]:m[3]], s[m[4]:m[5]]
		line := 1 + strings.Count(s[:m[0]], "\n")
		if kind == "begin" {
			stack = append(stack, open{env, line})
			continue
		}
		if len(stack) == 0 {
			ds = append(ds, Diagnostic{Line: line, Message: fmt.Sprintf(`\end{%s} without matching \begin`, env), Severity: "error"})
			continue
		}
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if top.env != env {
			ds = append(ds, Diagnostic{Line: line, Message: fmt.Sprintf(`\end{%s} mismatches \begin{%s} opened at line %d`, env, top.env, top.line), Severity: "error"})
		}
	}
	for i := len(stack) - 1; i >= 0; i-- {
		ds = append(ds, Diagnostic{Line: stack[i].line, Message: fmt.Sprintf(`\begin{%s} never closed`, stack[i].env), Severity: "error"})
	}
	return ds
}

// urlPercents returns the byte offsets of the % each URL match of
// (?:https?|ftp)://\S*(?<!\\)% ends on: the last unescaped % of the URL's
// non-space run.
func urlPercents(line string) []int {
	var out []int
	next := 0
	for _, m := range latexScheme.FindAllStringIndex(line, -1) {
		if m[0] < next {
			continue
		}
		end := m[1]
		for end < len(line) && !isSpaceASCII(line[end]) {
			end++
		}
		for k := end - 1; k >= m[1]; k-- {
			if line[k] == '%' && line[k-1] != '\\' {
				out = append(out, k)
				next = k + 1
				break
			}
		}
	}
	return out
}

func isSpaceASCII(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
