package gate

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/printer"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// The test-bypass pattern (envelope.PatternTestBypass) looks at every Go
// test function (Test*, Benchmark*, Fuzz*) the change adds or edits and
// rejects the constructs below when the change adds them: each one lets
// the test pass without running assertions it still contains. This list is
// the rule — the runtime's forbidden-pattern gate and review's
// forbidden-patterns analyser both apply it — and bypass_test.go has a
// failing and a passing example of each.
//
//	construct                                     fails                                          passes
//	unconditional early return                    return (then assertions)                       return after the last assertion
//	early return under a constant condition       if true { return }; if 1 == 1 { continue }     if err != nil { return } (data, not a constant)
//	early return conditioned on the environment   if !testing.Short() { return }                 if *update { write golden; return } (a flag)
//	                                              if os.Getenv("CI") == "" { return }            for _, tc := range cases { if tc.skip { continue } … }
//	                                              ci := os.Getenv("CI") != ""; if ci { return }
//	skip path                                     t.Skip(…), if testing.Short() { t.Skip(…) }    a skip the base version already had
//	assertions in a branch that never runs        if false { t.Fatal(…) }                        if got != want { t.Fatal(…) }
//	assertions in a loop that never runs          for range 0 { … }, for false { … }             for _, tc := range cases { … }
//	assertions in a closure that is never called  check := func() { t.Error(…) } (never called) check := …; check(); t.Run("x", check)
//	assertions after a call that ends the test    runtime.Goexit() or os.Exit(0), then asserts   t.Fatal(…) (the test fails: not a bypass)
//
// The environment is what a condition reads of where the test runs rather
// than of what it tests: os.Getenv, os.LookupEnv, os.Environ, os.ExpandEnv,
// testing.Short, testing.Verbose, testing.CoverMode, runtime.GOOS,
// runtime.GOARCH, runtime.NumCPU, os.Args, os.Hostname, os.Getuid,
// exec.LookPath, time.Now, and local variables derived from them. A
// constant condition is one made of true, false and literals.
// Conditions on the test's own data (a table case's field, an error) are
// legitimate; so is any construct the base version of the function
// already had. Each failure names the function, the construct, the
// assertion checks it keeps from running, and its file:line at the head.
//
// Only Go is covered (see the language table in lang.go): the constructs
// are recognised on the syntax tree (go/ast), which the lexical
// recognizers of the other languages cannot do reliably.

// testBypass applies the test-bypass rule to the changed Go test files.
func testBypass(base, head *goSide) []Failure {
	names := make([]string, 0, len(head.funcs))
	for n := range head.funcs {
		if isTestEntry(n) {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		fa, fb := head.funcs[a], head.funcs[b]
		if c := strings.Compare(fa.path, fb.path); c != 0 {
			return c
		}
		return int(fa.decl.Pos()) - int(fb.decl.Pos())
	})
	hm, bm := newModel(head), newModel(base)
	var out []Failure
	for _, name := range names {
		hf := head.funcs[name]
		bf := base.funcs[name]
		if bf != nil && fullSource(base, bf.decl) == fullSource(head, hf.decl) {
			continue // not touched by the change
		}
		had := map[string]int{}
		if bf != nil {
			for _, c := range constructsOf(bm, bf.decl) {
				had[c.kind+"\x00"+c.src]++
			}
		}
		for _, c := range constructsOf(hm, hf.decl) {
			if k := c.kind + "\x00" + c.src; had[k] > 0 {
				had[k]--
				continue
			}
			out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternTestBypass, File: hf.path, Line: c.line,
				Detail: describe(name, c)})
		}
	}
	return out
}

// constructsOf lists a test function's bypass constructs in source order.
func constructsOf(m *model, fd *ast.FuncDecl) []construct {
	v := &visitor{}
	m.funcChecks(fd, v)
	m.uncalled(fd, v)
	slices.SortStableFunc(v.constructs, func(a, b construct) int { return a.line - b.line })
	return v.constructs
}

func describe(fn string, c construct) string {
	if c.kind == "skip path" {
		return fmt.Sprintf("%s: a new t.Skip path: %s", fn, c.src)
	}
	return fmt.Sprintf("%s: %s keeps %d assertion check(s) from running: %s", fn, c.kind, c.after, c.src)
}

// fullSource renders a declaration whole, to tell whether the change
// touched it.
func fullSource(s *goSide, n ast.Node) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, s.fset, n); err != nil {
		return ""
	}
	return b.String()
}
