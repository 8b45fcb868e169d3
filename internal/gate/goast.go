package gate

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strconv"
	"strings"
)

// This file models what a Go test executes, from its syntax (go/ast, no type
// checking): which calls are assertions and skips, which statements are
// reachable, and how many assertion checks a test runs — a check inside a
// loop over a table of five cases counts five times, a helper that asserts
// counts at each call. The disabled-assertions pattern compares these counts
// between base and head, so a refactor that keeps the checks executing
// (inlined checks into a table, checks into a helper) is not flagged; the
// test-bypass rule (bypass.go) uses the same reachability.

// goSide is one version (base or head) of the changed Go test files.
type goSide struct {
	fset  *token.FileSet
	files map[string]*ast.File // by repository path
	funcs map[string]*goFunc   // top-level functions by name
	vars  map[string]ast.Expr  // package-level var initializers
}

// goFunc is one top-level function of a side.
type goFunc struct {
	decl *ast.FuncDecl
	path string
}

// parseGoSide parses src (path → source; nil sources are absent files). It
// reports false if any file does not parse: the caller then falls back to
// the lexical recognizers.
func parseGoSide(src map[string][]byte) (*goSide, bool) {
	s := &goSide{fset: token.NewFileSet(), files: map[string]*ast.File{}, funcs: map[string]*goFunc{}, vars: map[string]ast.Expr{}}
	for p, b := range src {
		if b == nil {
			continue
		}
		f, err := parser.ParseFile(s.fset, p, b, parser.SkipObjectResolution)
		if err != nil {
			return nil, false
		}
		s.files[p] = f
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil {
					continue // methods are not tests, and helpers rarely are methods
				}
				s.funcs[name] = &goFunc{decl: d, path: p}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					vs, ok := sp.(*ast.ValueSpec)
					if !ok || d.Tok != token.VAR {
						continue
					}
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							s.vars[n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	return s, true
}

// isTestEntry reports whether name is a function `go test` runs.
func isTestEntry(name string) bool {
	for _, p := range []string{"Test", "Benchmark", "Fuzz"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			if rest == "" || !('a' <= rest[0] && rest[0] <= 'z') {
				return name != "TestMain"
			}
		}
	}
	return false
}

// line is the 1-based line of pos.
func (s *goSide) line(pos token.Pos) int { return s.fset.Position(pos).Line }

// source renders a node on one line, clipped.
func (s *goSide) source(n ast.Node) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, s.fset, n); err != nil {
		return ""
	}
	return clip(strings.Join(strings.Fields(b.String()), " "))
}

// conventional names of testing values, for code whose declarations the
// model does not see (a helper in another file taking t).
var testingNames = map[string]bool{"t": true, "b": true, "f": true, "tb": true, "tt": true}

// isTestingType reports whether e is *testing.T, *testing.B, *testing.F or
// testing.TB.
func isTestingType(e ast.Expr) bool {
	if st, ok := e.(*ast.StarExpr); ok {
		e = st.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testing" && (sel.Sel.Name == "T" || sel.Sel.Name == "B" || sel.Sel.Name == "F" || sel.Sel.Name == "TB")
}

// takesTesting reports whether a function type has a testing parameter.
func takesTesting(ft *ast.FuncType) bool {
	if ft == nil || ft.Params == nil {
		return false
	}
	for _, p := range ft.Params.List {
		if isTestingType(p.Type) {
			return true
		}
	}
	return false
}

// scope is what the model knows inside one function body.
type scope struct {
	parent   *scope
	testing  map[string]bool         // names of testing values
	closures map[string]*ast.FuncLit // local variables holding a function literal
	locals   map[string]ast.Expr     // local variables' initializers
	env      map[string]bool         // local variables derived from the environment
	calls    map[string]int          // how often each local closure is called or passed on
}

func newScope(parent *scope, ft *ast.FuncType, body *ast.BlockStmt) *scope {
	sc := &scope{parent: parent, testing: map[string]bool{}, closures: map[string]*ast.FuncLit{},
		locals: map[string]ast.Expr{}, env: map[string]bool{}, calls: map[string]int{}}
	if ft != nil && ft.Params != nil {
		for _, p := range ft.Params.List {
			if isTestingType(p.Type) {
				for _, n := range p.Names {
					sc.testing[n.Name] = true
				}
			}
		}
	}
	if body != nil {
		sc.collect(body)
	}
	return sc
}

// collect records the body's local closures and initializers (not
// descending into nested function literals, which get scopes of their
// own) and how often each closure is used — called or passed on — anywhere
// in the body, nested literals included.
func (sc *scope) collect(body *ast.BlockStmt) {
	bindings := map[string]int{}
	bind := func(name string, v ast.Expr) {
		if name == "_" {
			return
		}
		bindings[name]++
		if fl, ok := v.(*ast.FuncLit); ok {
			sc.closures[name] = fl
			return
		}
		sc.locals[name] = v
		if sc.envExpr(v) {
			sc.env[name] = true
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						bind(id.Name, n.Rhs[i])
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if i < len(n.Values) {
					bind(id.Name, n.Values[i])
				}
			}
		}
		return true
	})
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if blank(n.Lhs) {
				return false // _ = check does not run check
			}
		case *ast.Ident:
			if sc.closures[n.Name] != nil {
				sc.calls[n.Name]++
			}
		}
		return true
	})
	for name := range sc.closures {
		sc.calls[name] -= bindings[name]
	}
}

// blank reports whether every expression is the blank identifier.
func blank(es []ast.Expr) bool {
	for _, e := range es {
		if id, ok := e.(*ast.Ident); !ok || id.Name != "_" {
			return false
		}
	}
	return len(es) > 0
}

// isTesting reports whether name is a testing value here.
func (sc *scope) isTesting(name string) bool {
	for s := sc; s != nil; s = s.parent {
		if s.testing[name] {
			return true
		}
	}
	return testingNames[name]
}

// closure resolves a local closure variable.
func (sc *scope) closure(name string) (*ast.FuncLit, *scope) {
	for s := sc; s != nil; s = s.parent {
		if fl := s.closures[name]; fl != nil {
			return fl, s
		}
	}
	return nil, nil
}

// local resolves a local variable's initializer.
func (sc *scope) local(name string) ast.Expr {
	for s := sc; s != nil; s = s.parent {
		if v := s.locals[name]; v != nil {
			return v
		}
	}
	return nil
}

func (sc *scope) envVar(name string) bool {
	for s := sc; s != nil; s = s.parent {
		if s.env[name] {
			return true
		}
	}
	return false
}

// envFuncs are the calls whose results depend on where a test runs rather
// than on what it tests.
var envFuncs = map[string]bool{
	"os.Getenv": true, "os.LookupEnv": true, "os.Environ": true, "os.ExpandEnv": true, "syscall.Getenv": true,
	"os.Hostname": true, "os.Getuid": true, "os.Geteuid": true, "os.Getwd": true, "exec.LookPath": true,
	"testing.Short": true, "testing.Verbose": true, "testing.CoverMode": true, "testing.Testing": true,
	"runtime.NumCPU": true, "runtime.GOMAXPROCS": true, "time.Now": true,
}

// envValues are package-level values that describe the environment.
var envValues = map[string]bool{"runtime.GOOS": true, "runtime.GOARCH": true, "os.Args": true}

// selName renders pkg.Name for a selector on an identifier, else "".
func selName(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return id.Name + "." + sel.Sel.Name
}

// envExpr reports whether e depends on the environment: an environment
// call or value, or a variable derived from one.
func (sc *scope) envExpr(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if envFuncs[selName(n.Fun)] {
				found = true
			}
		case *ast.SelectorExpr:
			if envValues[selName(n)] {
				found = true
			}
		case *ast.Ident:
			if sc.envVar(n.Name) {
				found = true
			}
		}
		return !found
	})
	return found
}

// truth is a condition's constant value, when it has one.
type truth int

const (
	unknown truth = iota
	always
	never
)

// constTruth evaluates a condition made of boolean and literal constants
// (true, !false, 1 == 1, "a" != "b", x || true); anything else is unknown.
func constTruth(e ast.Expr) truth {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return constTruth(e.X)
	case *ast.Ident:
		switch e.Name {
		case "true":
			return always
		case "false":
			return never
		}
	case *ast.UnaryExpr:
		if e.Op == token.NOT {
			switch constTruth(e.X) {
			case always:
				return never
			case never:
				return always
			}
		}
	case *ast.BinaryExpr:
		l, r := constTruth(e.X), constTruth(e.Y)
		switch e.Op {
		case token.LOR:
			if l == always || r == always {
				return always
			}
			if l == never && r == never {
				return never
			}
		case token.LAND:
			if l == never || r == never {
				return never
			}
			if l == always && r == always {
				return always
			}
		case token.EQL, token.NEQ:
			a, aok := e.X.(*ast.BasicLit)
			b, bok := e.Y.(*ast.BasicLit)
			if aok && bok && a.Kind == b.Kind {
				if (a.Value == b.Value) == (e.Op == token.EQL) {
					return always
				}
				return never
			}
		}
	}
	return unknown
}

// callKind classifies a call inside a test.
type callKind int

const (
	callOther  callKind = iota
	callAssert          // t.Error, t.Fatal, ..., assert.X, require.X
	callSkip            // t.Skip, t.Skipf, t.SkipNow
)

var (
	assertMethods = map[string]bool{"Error": true, "Errorf": true, "Fatal": true, "Fatalf": true, "Fail": true, "FailNow": true}
	skipMethods   = map[string]bool{"Skip": true, "Skipf": true, "SkipNow": true}
	// terminators end the test's goroutine (or the process) quietly.
	terminators = map[string]bool{"os.Exit": true, "runtime.Goexit": true}
)

// classify tells assertions and skips apart. The receiver of t.Error and
// t.Skip must be a testing value (t.Error on a logger is not an
// assertion); assert.X and require.X are testify's.
func (sc *scope) classify(c *ast.CallExpr) callKind {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return callOther
	}
	if id, ok := sel.X.(*ast.Ident); ok {
		if id.Name == "assert" || id.Name == "require" {
			return callAssert
		}
		if sc.isTesting(id.Name) {
			switch {
			case assertMethods[sel.Sel.Name]:
				return callAssert
			case skipMethods[sel.Sel.Name]:
				return callSkip
			}
		}
	}
	return callOther
}

// terminates reports whether a call ends the test's goroutine without
// failing it, so that what follows never runs and nobody notices: os.Exit
// and runtime.Goexit. A call that ends it by failing (t.Fatal, panic) is
// not a bypass — the test fails — and a skip is its own construct.
func (sc *scope) terminates(c *ast.CallExpr) bool {
	return terminators[selName(c.Fun)]
}

// maxWeight bounds the checks one construct can count.
const maxWeight = 1 << 20

func mulWeight(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > maxWeight/b {
		return maxWeight
	}
	return a * b
}

// litLen is the number of elements of a composite literal, or -1.
func litLen(e ast.Expr) int {
	switch e := e.(type) {
	case *ast.CompositeLit:
		return len(e.Elts)
	case *ast.ParenExpr:
		return litLen(e.X)
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			return litLen(e.X)
		}
	}
	return -1
}

// intLit is the value of an integer literal, or -1.
func intLit(e ast.Expr) int {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.INT {
		return -1
	}
	n, err := strconv.Atoi(bl.Value)
	if err != nil || n < 0 {
		return -1
	}
	return min(n, maxWeight)
}

// rangeWeight is how often a range loop's body runs when that is known
// from the syntax (a literal table, a local or package variable holding
// one, an integer constant); 1 otherwise.
func (m *model) rangeWeight(sc *scope, e ast.Expr) int {
	if n := intLit(e); n >= 0 {
		return n
	}
	if n := litLen(e); n >= 0 {
		return n
	}
	if id, ok := e.(*ast.Ident); ok {
		if v := sc.local(id.Name); v != nil {
			if n := litLen(v); n >= 0 {
				return n
			}
			if n := intLit(v); n >= 0 {
				return n
			}
		}
		if v := m.side.vars[id.Name]; v != nil {
			if n := litLen(v); n >= 0 {
				return n
			}
		}
	}
	return 1
}

// forWeight is the trip count of `for i := 0; i < N; i++` with a literal N.
func forWeight(f *ast.ForStmt) int {
	if f.Cond == nil {
		return 1
	}
	be, ok := f.Cond.(*ast.BinaryExpr)
	if !ok || (be.Op != token.LSS && be.Op != token.LEQ) {
		return 1
	}
	n := intLit(be.Y)
	if n < 0 {
		return 1
	}
	init, ok := f.Init.(*ast.AssignStmt)
	if !ok || len(init.Rhs) != 1 || intLit(init.Rhs[0]) != 0 {
		return 1
	}
	if be.Op == token.LEQ {
		n++
	}
	return n
}
