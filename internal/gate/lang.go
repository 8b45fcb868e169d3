package gate

import (
	"path"
	"regexp"
	"strings"
)

// lang is a language whose test files the forbidden-pattern gate reads.
type lang int

const (
	langNone lang = iota
	langGo
	langPython
	langJS
)

func (l lang) String() string {
	return [...]string{"", "Go", "Python", "JS/TS"}[l]
}

// testLang classifies p as a test file of a known language, or langNone.
// Go: *_test.go. Python: test_*.py, *_test.py, conftest.py and .py files
// under a tests/ or test/ directory. JS/TS: *.test.*, *.spec.* and files
// under __tests__/, tests/ or test/.
func testLang(p string) lang {
	base := path.Base(p)
	ext := path.Ext(base)
	inTestDir := false
	for _, d := range strings.Split(path.Dir(p), "/") {
		if d == "test" || d == "tests" || d == "__tests__" {
			inTestDir = true
		}
	}
	switch ext {
	case ".go":
		if strings.HasSuffix(base, "_test.go") {
			return langGo
		}
	case ".py":
		if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" || inTestDir {
			return langPython
		}
	case ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		stem := strings.TrimSuffix(base, ext)
		if strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec") || inTestDir {
			return langJS
		}
	}
	return langNone
}

// codeLines returns src split into lines with comments removed and the
// contents of strings that span lines blanked, so that code commented out or
// buried in a multi-line string is not mistaken for code. Single-line
// strings are kept: JS test names live in them. The scanner is lexical and
// approximate (no JS regex literals), which is enough to count tests,
// assertions and skip markers.
func codeLines(src string, l lang) []string {
	var lines []string
	var cur strings.Builder
	const (
		code = iota
		lineComment
		blockComment
		str
	)
	state := code
	var quote string // closing delimiter of the current string
	multi := false   // the current string may span lines
	startLine := 0   // line where the current string started
	escapes := true
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\n' {
			lines = append(lines, cur.String())
			cur.Reset()
			if state == lineComment {
				state = code
			}
			if state == str && !multi {
				state = code // unterminated single-line string: recover
			}
			continue
		}
		switch state {
		case code:
			switch {
			case l != langPython && c == '/' && i+1 < len(src) && src[i+1] == '/':
				state = lineComment
				i++
			case l != langPython && c == '/' && i+1 < len(src) && src[i+1] == '*':
				state = blockComment
				i++
			case l == langPython && c == '#':
				state = lineComment
			case l == langPython && (strings.HasPrefix(src[i:], `"""`) || strings.HasPrefix(src[i:], `'''`)):
				state, quote, multi, escapes, startLine = str, src[i:i+3], true, true, len(lines)
				cur.WriteString(quote)
				i += 2
			case c == '"' || c == '\'':
				state, quote, multi, escapes, startLine = str, string(c), false, true, len(lines)
				cur.WriteByte(c)
			case c == '`' && l != langPython:
				state, quote, multi, escapes, startLine = str, "`", true, l == langJS, len(lines)
				cur.WriteByte(c)
			default:
				cur.WriteByte(c)
			}
		case lineComment:
		case blockComment:
			if c == '*' && i+1 < len(src) && src[i+1] == '/' {
				state = code
				i++
				cur.WriteByte(' ')
			}
		case str:
			keep := len(lines) == startLine // text on the string's first line stays
			if escapes && c == '\\' && i+1 < len(src) && src[i+1] != '\n' {
				if keep {
					cur.WriteByte(c)
					cur.WriteByte(src[i+1])
				}
				i++
				continue
			}
			if strings.HasPrefix(src[i:], quote) {
				state = code
				cur.WriteString(quote)
				i += len(quote) - 1
				continue
			}
			if keep {
				cur.WriteByte(c)
			}
		}
	}
	if cur.Len() > 0 || len(lines) == 0 || !strings.HasSuffix(src, "\n") {
		lines = append(lines, cur.String())
	}
	return lines
}

// Per-language recognizers, applied to code lines.
type recognizer struct {
	testDef   *regexp.Regexp // submatches: the test's name (first non-empty group)
	assertion *regexp.Regexp
	skip      *regexp.Regexp
}

// jsName matches a quoted test name.
const jsName = `\s*\(\s*(?:'([^']*)'|"([^"]*)"|` + "`([^`]*)`" + `)`

func recognizers() map[lang]recognizer {
	return map[lang]recognizer{
		langGo: {
			testDef:   regexp.MustCompile(`^\s*func\s+(?:\([^)]*\)\s*)?((?:Test|Benchmark|Fuzz|Example)\w*)\s*\(`),
			assertion: regexp.MustCompile(`(?:\b(?:t|b|f|tb|tt)|\.T\(\))\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\b(?:assert|require)\.\w+\s*\(`),
			skip:      regexp.MustCompile(`(?:\b(?:t|b|f|tb|tt)|\.T\(\))\.(?:Skip|Skipf|SkipNow)\s*\(`),
		},
		langPython: {
			testDef:   regexp.MustCompile(`^\s*(?:async\s+)?def\s+(test\w*)\s*\(`),
			assertion: regexp.MustCompile(`^\s*assert\b|\bself\.(?:assert\w*|fail\w*)\s*\(|\bpytest\.(?:raises|fail|approx)\b|\bnp\.testing\.assert\w*`),
			skip: regexp.MustCompile(`@\s*(?:pytest\.mark\.(?:skip|skipif|xfail)|unittest\.(?:skip|skipIf|skipUnless|expectedFailure))\b|` +
				`\bpytest\.(?:skip|xfail|importorskip)\s*\(|\bself\.skipTest\s*\(|\braise\s+(?:unittest\.)?SkipTest\b|\bpytestmark\s*=.*\bmark\.(?:skip|xfail)`),
		},
		langJS: {
			testDef:   regexp.MustCompile(`(?:^|[^\w$.])[xf]?(?:it|test)(?:\.(?:only|skip|concurrent|failing|todo))?` + jsName),
			assertion: regexp.MustCompile(`\bexpect\s*\(|\bassert(?:\.\w+)?\s*\(|\.should\b|\bexpectTypeOf\s*\(`),
			skip: regexp.MustCompile(`(?:^|[^\w$.])(?:it|test|describe|suite|context)\.(?:skip|only)\b|` +
				`(?:^|[^\w$.])(?:xit|xtest|xdescribe|fit|fdescribe)\s*\(`),
		},
	}
}

// goBuildLine matches a Go build constraint, which can switch a test file off.
var goBuildLine = regexp.MustCompile(`^\s*//(?:go:build|\s*\+build)\s`)

func firstGroup(m []string) string {
	for _, g := range m[1:] {
		if g != "" {
			return g
		}
	}
	return ""
}
