package gate

import (
	"path"
	"regexp"
	"strings"
)

// Lang is a language whose test files the forbidden-pattern gate reads.
// SourceLang and TestFileLang are apiary's one set of rules for which files
// are source and which are tests; review and the swarm's merge role use
// them too. What each pattern knows of each language:
//
//	pattern              Go                                   Python              JS/TS
//	deleted-tests        func Test/Benchmark/Fuzz/Example     def test_*          it(), test()
//	disabled-assertions  assertion checks executed (go/ast)   assert, self.assert expect(), assert()
//	skip-markers         t.Skip, //go:build in a test file    pytest/unittest skip it.skip, xit, .only
//	emptied-tests        a file left without tests            same                same
//	test-bypass          bypass.go's constructs (go/ast)      not covered         not covered
//
// Go's assertion count and test-bypass read the syntax tree; when a Go file
// does not parse, its assertions are counted lexically as the other
// languages' are, and test-bypass does not apply (the build fails anyway).
type Lang int

// The languages; LangNone is every other file.
const (
	LangNone Lang = iota
	LangGo
	LangPython
	LangJS
)

// String names the language for people: "Go", "Python", "JS/TS" ("" for
// LangNone).
func (l Lang) String() string {
	if l < LangNone || l > LangJS {
		return ""
	}
	return [...]string{"", "Go", "Python", "JS/TS"}[l]
}

// SourceLang classifies p by its extension: .go is Go, .py Python, and .js,
// .jsx, .mjs, .cjs, .ts, .tsx, .mts, .cts JS/TS; anything else LangNone.
func SourceLang(p string) Lang {
	switch path.Ext(p) {
	case ".go":
		return LangGo
	case ".py":
		return LangPython
	case ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts":
		return LangJS
	}
	return LangNone
}

// TestFileLang classifies p as a test file of a known language, or
// LangNone. Go: *_test.go outside testdata/ (the go command ignores
// testdata, so a test file there is a fixture). Python: test_*.py,
// *_test.py, conftest.py and .py files under a tests/, test/ or __tests__/
// directory. JS/TS: *.test.* and *.spec.* and files under __tests__/,
// tests/ or test/. A name with the test marker in another language's
// extension (test_x.go, x.test.py, x.spec.go) is not a test file: no test
// runner of that language picks it up.
func TestFileLang(p string) Lang {
	base := path.Base(p)
	inTestDir, inTestdata := false, false
	for _, d := range strings.Split(path.Dir(p), "/") {
		switch d {
		case "test", "tests", "__tests__":
			inTestDir = true
		case "testdata":
			inTestdata = true
		}
	}
	switch l := SourceLang(p); l {
	case LangGo:
		if strings.HasSuffix(base, "_test.go") && !inTestdata {
			return l
		}
	case LangPython:
		if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" || inTestDir {
			return l
		}
	case LangJS:
		stem := strings.TrimSuffix(base, path.Ext(base))
		if strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec") || inTestDir {
			return l
		}
	}
	return LangNone
}

// IsTestFile reports whether p is a test file of a known language (see
// TestFileLang).
func IsTestFile(p string) bool { return TestFileLang(p) != LangNone }

// codeLines returns src split into lines with comments removed and the
// contents of strings that span lines blanked, so that code commented out or
// buried in a multi-line string is not mistaken for code. Single-line
// strings are kept: JS test names live in them. The scanner is lexical and
// approximate (no JS regex literals), which is enough to count tests,
// assertions and skip markers.
func codeLines(src string, l Lang) []string {
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
			case l != LangPython && c == '/' && i+1 < len(src) && src[i+1] == '/':
				state = lineComment
				i++
			case l != LangPython && c == '/' && i+1 < len(src) && src[i+1] == '*':
				state = blockComment
				i++
			case l == LangPython && c == '#':
				state = lineComment
			case l == LangPython && (strings.HasPrefix(src[i:], `"""`) || strings.HasPrefix(src[i:], `'''`)):
				state, quote, multi, escapes, startLine = str, src[i:i+3], true, true, len(lines)
				cur.WriteString(quote)
				i += 2
			case c == '"' || c == '\'':
				state, quote, multi, escapes, startLine = str, string(c), false, true, len(lines)
				cur.WriteByte(c)
			case c == '`' && l != LangPython:
				state, quote, multi, escapes, startLine = str, "`", true, l == LangJS, len(lines)
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

func recognizers() map[Lang]recognizer {
	return map[Lang]recognizer{
		LangGo: {
			testDef:   regexp.MustCompile(`^\s*func\s+(?:\([^)]*\)\s*)?((?:Test|Benchmark|Fuzz|Example)\w*)\s*\(`),
			assertion: regexp.MustCompile(`(?:\b(?:t|b|f|tb|tt)|\.T\(\))\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\b(?:assert|require)\.\w+\s*\(`),
			skip:      regexp.MustCompile(`(?:\b(?:t|b|f|tb|tt)|\.T\(\))\.(?:Skip|Skipf|SkipNow)\s*\(`),
		},
		LangPython: {
			testDef:   regexp.MustCompile(`^\s*(?:async\s+)?def\s+(test\w*)\s*\(`),
			assertion: regexp.MustCompile(`^\s*assert\b|\bself\.(?:assert\w*|fail\w*)\s*\(|\bpytest\.(?:raises|fail|approx)\b|\bnp\.testing\.assert\w*`),
			skip: regexp.MustCompile(`@\s*(?:pytest\.mark\.(?:skip|skipif|xfail)|unittest\.(?:skip|skipIf|skipUnless|expectedFailure))\b|` +
				`\bpytest\.(?:skip|xfail|importorskip)\s*\(|\bself\.skipTest\s*\(|\braise\s+(?:unittest\.)?SkipTest\b|\bpytestmark\s*=.*\bmark\.(?:skip|xfail)`),
		},
		LangJS: {
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
