package review

import (
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/scanner"
	"go/token"
	"path"
	"regexp"
	"strings"

	"github.com/apiary-dev/apiary/internal/gate"
)

// Function extraction, for duplicate detection (the swarm's merge role)
// and review. A function's body is normalized to its token sequence — comments and layout dropped, so two
// bodies that differ only there are the same — and hashed with SHA-256:
// equal hashes are exact duplicates. Near duplicates are found by the
// similarity ratio of two token sequences, 2·M/T where M is the length of
// their longest common subsequence and T the total length (difflib's
// ratio), against a threshold. Go files are parsed with go/parser;
// Python and JavaScript/TypeScript functions are found by their syntax.

// Func is one function found in a source file.
type Func struct {
	Name string `json:"name"`
	File string `json:"file"`
	Line int    `json:"line"`
	Lang string `json:"lang"`
	// Hash is the SHA-256 of the normalized body (hex).
	Hash string `json:"hash"`
	// Signature is the function's declaration without its body, on one
	// line ("func Sum(xs []int) int"); Doc the first line of its
	// documentation ("" when it has none).
	Signature string `json:"signature,omitempty"`
	Doc       string `json:"doc,omitempty"`
	// Tokens is the normalized body.
	Tokens []string `json:"-"`
}

// maxSignature bounds a signature and a doc line.
const maxSignature = 200

// oneLine folds white space to single spaces and bounds the result.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxSignature {
		s = string(r[:maxSignature-1]) + "…"
	}
	return s
}

// LangOf names the language of a file, by gate.SourceLang's rules, as Func.Lang
// records it: "go", "py", "js" (JavaScript and TypeScript), "" if unknown.
func LangOf(file string) string {
	switch gate.SourceLang(file) {
	case gate.LangGo:
		return "go"
	case gate.LangPython:
		return "py"
	case gate.LangJS:
		return "js"
	}
	return ""
}

// UtilityFile reports whether the functions of file are utilities others
// may reuse, so that duplicate detection and the utility index read them:
// a source file of a language ExtractFuncs reads that is neither a test
// file (gate.IsTestFile) nor another project's code or a fixture (below a
// vendor/, node_modules/ or testdata/ directory).
func UtilityFile(file string) bool {
	if LangOf(file) == "" || gate.IsTestFile(file) {
		return false
	}
	for _, d := range strings.Split(path.Dir(file), "/") {
		if d == "vendor" || d == "node_modules" || d == "testdata" {
			return false
		}
	}
	return true
}

// ExtractFuncs returns the functions defined in src, a file named file.
// Unparsable input yields what could be found (nothing for broken Go).
func ExtractFuncs(file string, src []byte) []Func {
	var out []Func
	switch lang := LangOf(file); lang {
	case "go":
		out = goFuncs(file, src)
	case "py":
		out = pyFuncs(file, src)
	case "js":
		out = jsFuncs(file, src)
	}
	for i := range out {
		out[i].Lang = LangOf(file)
		out[i].Hash = hashTokens(out[i].Tokens)
	}
	return out
}

func hashTokens(toks []string) string {
	h := sha256.New()
	for _, t := range toks {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func goFuncs(file string, src []byte) []Func {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil
	}
	var out []Func
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			recv, _ := recvName(fd.Recv)
			if recv == "" {
				recv = "?"
			}
			name = recv + "." + name
		}
		start, end := fset.Position(fd.Body.Lbrace).Offset, fset.Position(fd.Body.Rbrace).Offset
		fn := Func{Name: name, File: file, Line: fset.Position(fd.Pos()).Line, Tokens: goTokens(src[start : end+1])}
		decl := *fd
		decl.Body, decl.Doc = nil, nil
		var sig strings.Builder
		if printer.Fprint(&sig, fset, &decl) == nil {
			fn.Signature = oneLine(sig.String())
		}
		if fd.Doc != nil {
			fn.Doc = oneLine(firstLineOf(fd.Doc.Text()))
		}
		out = append(out, fn)
	}
	return out
}

// goTokens is the token sequence of Go source, comments and automatic
// semicolons dropped.
func goTokens(src []byte) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(src)), src, nil, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		if lit != "" {
			out = append(out, lit)
		} else {
			out = append(out, tok.String())
		}
	}
}

// genericToken splits C-like and Python source into identifiers, numbers,
// strings and single punctuation characters.
var genericToken = regexp.MustCompile(`[A-Za-z_$][A-Za-z0-9_$]*|\d[\d.xXa-fA-F_]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|` + "`[^`]*`" + `|\S`)

// stripComments removes line comments starting with marker and (for C-like
// code) block comments, outside string literals.
func stripComments(src string, marker string, block bool) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(src) && src[j] != c && (c == '`' || src[j] != '\n') {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			b.WriteString(src[i:j])
			i = j
		case strings.HasPrefix(src[i:], marker):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case block && strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			// Keep the comment's line breaks, so that lines still count.
			b.WriteString(strings.Repeat("\n", strings.Count(src[i:i+end+4], "\n")))
			i += end + 4
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

var pyDef = regexp.MustCompile(`(?m)^([ \t]*)(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(`)

func pyFuncs(file string, src []byte) []Func {
	text := stripComments(string(src), "#", false)
	lines := strings.Split(text, "\n")
	var out []Func
	for _, m := range pyDef.FindAllStringSubmatchIndex(text, -1) {
		indent := len(text[m[2]:m[3]])
		name := text[m[4]:m[5]]
		line := strings.Count(text[:m[0]], "\n")
		// The body: following lines indented deeper than the def (blank
		// lines included), after the line that ends the signature.
		var body []string
		i := line + 1
		for ; i < len(lines); i++ {
			l := lines[i]
			if strings.TrimSpace(l) == "" {
				continue
			}
			if len(l)-len(strings.TrimLeft(l, " \t")) <= indent {
				break
			}
			body = append(body, l)
		}
		fn := Func{Name: name, File: file, Line: line + 1, Tokens: genericToken.FindAllString(strings.Join(body, "\n"), -1)}
		orig := strings.Split(string(src), "\n")
		if line < len(orig) {
			sig, j := orig[line], line+1
			for ; !strings.Contains(sig, ":") && j < len(orig) && j < line+10; j++ {
				sig += " " + orig[j] // a signature over several lines
			}
			if k := strings.LastIndex(sig, ":"); k >= 0 {
				sig = sig[:k]
			}
			fn.Signature = oneLine(sig)
			fn.Doc = pyDocstring(orig[min(j, len(orig)):])
		}
		out = append(out, fn)
	}
	return out
}

// pyDocstring is the first line of the docstring at the start of body.
func pyDocstring(body []string) string {
	for _, l := range body {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		for _, q := range []string{`"""`, `'''`, `"`, `'`} {
			if strings.HasPrefix(t, q) {
				t = strings.TrimSpace(strings.TrimPrefix(t, q))
				if i := strings.Index(t, q); i >= 0 {
					t = t[:i]
				}
				return oneLine(t)
			}
		}
		return ""
	}
	return ""
}

var jsDef = regexp.MustCompile(`(?m)(?:^|[^.\w$])(?:function[ \t]*\*?[ \t]*([A-Za-z_$][\w$]*)[ \t]*\([^)]*\)[^{;]*|(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)[ \t]*=[ \t]*(?:async[ \t]*)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)[ \t]*=>[ \t]*)\{`)

func jsFuncs(file string, src []byte) []Func {
	text := stripComments(string(src), "//", true)
	var out []Func
	for _, m := range jsDef.FindAllStringSubmatchIndex(text, -1) {
		name := ""
		if m[2] >= 0 {
			name = text[m[2]:m[3]]
		} else if m[4] >= 0 {
			name = text[m[4]:m[5]]
		}
		open := m[1] - 1
		end := matchBrace(text, open)
		if name == "" || end < 0 {
			continue
		}
		fn := Func{Name: name, File: file, Line: strings.Count(text[:open], "\n") + 1,
			Tokens: genericToken.FindAllString(text[open:end+1], -1)}
		start := m[0]
		if c := text[start]; c != 'f' && c != 'c' && c != 'l' && c != 'v' {
			start++ // the character before the declaration
		}
		fn.Signature = oneLine(text[start:open])
		fn.Doc = jsDoc(strings.Split(string(src), "\n"), strings.Count(text[:start], "\n"))
		out = append(out, fn)
	}
	return out
}

// jsDoc is the first line of the comment just above line n (0-based) of
// lines: a run of // lines or a /** block.
func jsDoc(lines []string, n int) string {
	i := n - 1
	for i >= 0 && strings.TrimSpace(lines[i]) == "" {
		i--
	}
	if i < 0 {
		return ""
	}
	if last := strings.TrimSpace(lines[i]); strings.HasSuffix(last, "*/") {
		j := i
		for j >= 0 && !strings.Contains(lines[j], "/*") {
			j--
		}
		if j < 0 {
			return ""
		}
		for _, l := range lines[j : i+1] {
			t := strings.TrimSpace(l)
			t = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "/**"), "/*"))
			t = strings.TrimSpace(strings.TrimSuffix(strings.TrimLeft(t, "*"), "*/"))
			if t != "" && t != "/" {
				return oneLine(t)
			}
		}
		return ""
	}
	first := ""
	for ; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(t, "//") {
			break
		}
		first = strings.TrimSpace(strings.TrimPrefix(t, "//"))
	}
	return oneLine(first)
}

// firstLineOf is the first non-empty line of s.
func firstLineOf(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

// matchBrace returns the index of the brace closing the one at open,
// skipping string literals; -1 if unbalanced.
func matchBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// Similarity is difflib's ratio of two token sequences: 2·LCS/(len a +
// len b), 1 for two empty sequences.
func Similarity(a, b []string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return 2 * float64(prev[len(b)]) / float64(len(a)+len(b))
}
