package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
)

// testFile is what the forbidden-pattern gate knows of one changed test
// file: its code lines before and after (nil when absent) and the patch.
type testFile struct {
	path     string
	lang     Lang
	old, new []string // code lines, see codeLines
	// oldSrc and newSrc are the versions' sources (nil when absent).
	oldSrc, newSrc []byte
	removed        []git.Line
	added          []git.Line
}

// scan is what the recognizers found in one version of a file.
type scan struct {
	defs    []def
	asserts []int // 1-based line numbers
	skips   []int
}

type def struct {
	name string
	line int
}

func scanLines(lines []string, rec recognizer) scan {
	var s scan
	for i, l := range lines {
		if m := rec.testDef.FindStringSubmatch(l); m != nil {
			s.defs = append(s.defs, def{firstGroup(m), i + 1})
		}
		if rec.assertion.MatchString(l) {
			s.asserts = append(s.asserts, i+1)
		}
		if rec.skip.MatchString(l) {
			s.skips = append(s.skips, i+1)
		}
	}
	return s
}

// codeAt returns line n (1-based) of lines, or "".
func codeAt(lines []string, n int) string {
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

// detectForbidden looks for the enabled patterns in the changed test files.
// Counts are compared per language across the whole change, so moving or
// renaming a test or an assertion between files is not flagged; only a net
// loss of tests or assertions, or a net gain of skip markers, is.
func detectForbidden(files []*testFile, enabled map[string]bool) []Failure {
	recs := recognizers()
	var out []Failure
	byLang := map[Lang][]*testFile{}
	for _, f := range files {
		byLang[f.lang] = append(byLang[f.lang], f)
	}
	for _, l := range []Lang{LangGo, LangPython, LangJS} {
		fs := byLang[l]
		if len(fs) == 0 {
			continue
		}
		rec := recs[l]
		olds := make([]scan, len(fs))
		news := make([]scan, len(fs))
		for i, f := range fs {
			olds[i], news[i] = scanLines(f.old, rec), scanLines(f.new, rec)
		}
		if enabled[envelope.PatternDeletedTests] {
			out = append(out, deletedTests(fs, olds, news)...)
		}
		var base, head *goSide
		parsed := false
		if l == LangGo {
			base, head, parsed = parseGoSides(fs)
		}
		if enabled[envelope.PatternDisabledAssertions] {
			if parsed {
				out = append(out, goDisabledAssertions(fs, base, head)...)
			} else {
				out = append(out, disabledAssertions(fs, olds, news, rec)...)
			}
		}
		var skips []Failure
		if enabled[envelope.PatternSkipMarkers] {
			skips = skipMarkers(fs, olds, news, rec)
			out = append(out, skips...)
		}
		if enabled[envelope.PatternTestBypass] && parsed {
			// A skip the skip-markers pattern reports already is not
			// reported twice.
			for _, f := range testBypass(base, head) {
				if strings.Contains(f.Detail, "a new t.Skip path") && slices.ContainsFunc(skips, func(s Failure) bool { return s.File == f.File && s.Line == f.Line }) {
					continue
				}
				out = append(out, f)
			}
		}
		if enabled[envelope.PatternEmptiedTests] {
			for i, f := range fs {
				if f.new != nil && f.old != nil && len(olds[i].defs) > 0 && len(news[i].defs) == 0 {
					out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternEmptiedTests, File: f.path, Line: 1,
						Detail: fmt.Sprintf("%s test file emptied: it had %d test(s), now none", l, len(olds[i].defs))})
				}
			}
		}
	}
	return out
}

func deletedTests(fs []*testFile, olds, news []scan) []Failure {
	count := map[string]int{} // old occurrences minus new ones
	total := 0
	for i := range fs {
		for _, d := range olds[i].defs {
			count[d.name]++
			total++
		}
		for _, d := range news[i].defs {
			count[d.name]--
			total--
		}
	}
	if total <= 0 {
		return nil // as many tests as before: renamed or moved, not deleted
	}
	var out []Failure
	for i, f := range fs {
		for _, d := range olds[i].defs {
			if count[d.name] > 0 {
				count[d.name]--
				out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternDeletedTests, File: f.path, Line: d.line,
					Detail: fmt.Sprintf("test %s deleted (line %d of the base version; the change removes %d test(s) in all)", d.name, d.line, total)})
			}
		}
	}
	return out
}

func disabledAssertions(fs []*testFile, olds, news []scan, rec recognizer) []Failure {
	before, after := 0, 0
	moved := map[string]int{} // assertion code added anywhere in the change
	for i, f := range fs {
		before += len(olds[i].asserts)
		after += len(news[i].asserts)
		for _, a := range f.added {
			if c := codeAt(f.new, a.NewLine); rec.assertion.MatchString(c) {
				moved[strings.TrimSpace(c)]++
			}
		}
	}
	if after >= before {
		return nil
	}
	var out []Failure
	for i, f := range fs {
		if len(news[i].asserts) >= len(olds[i].asserts) {
			continue
		}
		n := 0
		for _, r := range f.removed {
			c := strings.TrimSpace(codeAt(f.old, r.OldLine))
			if !rec.assertion.MatchString(c) {
				continue
			}
			if moved[c] > 0 {
				moved[c]--
				continue
			}
			n++
			out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternDisabledAssertions, File: f.path, Line: r.OldLine,
				Detail: fmt.Sprintf("assertion removed or disabled (line %d of the base version): %s", r.OldLine, clip(c))})
		}
		if n == 0 {
			// Fewer assertions but no removed assertion line: code was
			// commented out or buried in a string around unchanged lines.
			out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternDisabledAssertions, File: f.path, Line: firstChange(f),
				Detail: fmt.Sprintf("assertions reduced from %d to %d", len(olds[i].asserts), len(news[i].asserts))})
		}
	}
	return out
}

func skipMarkers(fs []*testFile, olds, news []scan, rec recognizer) []Failure {
	before, after := 0, 0
	gone := map[string]int{} // marker code removed anywhere in the change
	for i, f := range fs {
		before += len(olds[i].skips)
		after += len(news[i].skips)
		for _, r := range f.removed {
			if c := codeAt(f.old, r.OldLine); rec.skip.MatchString(c) {
				gone[strings.TrimSpace(c)]++
			}
		}
	}
	var out []Failure
	for i, f := range fs {
		// Go build constraints switch a whole test file off; they are
		// comments, so look at the raw text.
		if f.lang == LangGo {
			had := map[string]bool{}
			for _, r := range f.removed {
				had[strings.TrimSpace(r.Text)] = true
			}
			for _, a := range f.added {
				if goBuildLine.MatchString(a.Text) && !had[strings.TrimSpace(a.Text)] {
					out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternSkipMarkers, File: f.path, Line: a.NewLine,
						Detail: "build constraint added to a test file: " + clip(a.Text)})
				}
			}
		}
		if after <= before || len(news[i].skips) <= len(olds[i].skips) {
			continue
		}
		n := 0
		for _, a := range f.added {
			c := strings.TrimSpace(codeAt(f.new, a.NewLine))
			if !rec.skip.MatchString(c) {
				continue
			}
			if gone[c] > 0 {
				gone[c]--
				continue
			}
			n++
			out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternSkipMarkers, File: f.path, Line: a.NewLine,
				Detail: "skip marker added: " + clip(c)})
		}
		if n == 0 {
			out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternSkipMarkers, File: f.path, Line: firstChange(f),
				Detail: fmt.Sprintf("skip markers increased from %d to %d", len(olds[i].skips), len(news[i].skips))})
		}
	}
	return out
}

// firstChange is the first line the patch touches, in the new version if it
// adds anything, else in the old one.
func firstChange(f *testFile) int {
	if len(f.added) > 0 {
		return f.added[0].NewLine
	}
	if len(f.removed) > 0 {
		return f.removed[0].OldLine
	}
	return 1
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 120 {
		return string(r[:117]) + "..."
	}
	return s
}

// parseGoSides parses both versions of the changed Go test files; false if
// any does not parse (the lexical recognizers then judge them).
func parseGoSides(fs []*testFile) (base, head *goSide, ok bool) {
	olds, news := map[string][]byte{}, map[string][]byte{}
	for _, f := range fs {
		olds[f.path], news[f.path] = f.oldSrc, f.newSrc
	}
	base, ok1 := parseGoSide(olds)
	head, ok2 := parseGoSide(news)
	return base, head, ok1 && ok2
}

// sideChecks counts the assertion checks every test function of a side
// runs, and returns the sites of each.
func sideChecks(s *goSide) (total int, per map[string]int, sites map[string][]site) {
	m := newModel(s)
	per, sites = map[string]int{}, map[string][]site{}
	for name, f := range s.funcs {
		if !isTestEntry(name) {
			continue
		}
		v := &visitor{}
		c := m.funcChecks(f.decl, v)
		per[name] = c.live
		total += c.live
		sites[name] = v.sites
	}
	return total, per, sites
}

// goDisabledAssertions compares the assertion checks the changed Go tests
// execute (see goast.go), base against head, across the whole change: a
// check moved to another test or file, into a table or a helper, still
// counts. When fewer run at the head and the base assertions with no
// counterpart at the head account for the loss, each is reported at its
// base line; otherwise (a table lost cases, a helper is called less) each
// test that runs fewer checks is.
func goDisabledAssertions(fs []*testFile, base, head *goSide) []Failure {
	bt, bper, bsites := sideChecks(base)
	ht, hper, hsites := sideChecks(head)
	if ht >= bt {
		return nil
	}
	texts := map[string]int{}
	for _, ss := range hsites {
		for _, s := range ss {
			if s.live {
				texts[head.source(s.call)]++
			}
		}
	}
	type at struct {
		path string
		line int
		name string
	}
	var missing []at
	removed := 0 // the checks the unmatched sites ran
	for name, ss := range bsites {
		for _, s := range ss {
			if !s.live {
				continue
			}
			src := base.source(s.call)
			if texts[src] > 0 {
				texts[src]--
				continue
			}
			missing = append(missing, at{base.funcs[name].path, base.line(s.call.Pos()), src})
			removed += s.weight
		}
	}
	slices.SortFunc(missing, func(a, b at) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return a.line - b.line
	})
	var out []Failure
	if removed != bt-ht {
		// The unmatched assertions do not account for the loss: they
		// were rewritten (into a table, a helper) and something else
		// shrank. Blame the tests instead.
		missing = nil
	}
	for _, m := range missing {
		out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternDisabledAssertions, File: m.path, Line: m.line,
			Detail: fmt.Sprintf("assertion removed or no longer run (line %d of the base version): %s; the changed tests run %d assertion check(s), %d at the base", m.line, m.name, ht, bt)})
	}
	if len(out) > 0 {
		return out
	}
	var names []string
	for name := range bper {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if hper[name] >= bper[name] {
			continue
		}
		f, s := head.funcs[name], head
		if f == nil {
			f, s = base.funcs[name], base
		}
		out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternDisabledAssertions, File: f.path, Line: s.line(f.decl.Pos()),
			Detail: fmt.Sprintf("%s runs %d assertion check(s), %d at the base (a table or loop lost cases)", name, hper[name], bper[name])})
	}
	if len(out) == 0 && len(fs) > 0 {
		out = append(out, Failure{Gate: GateForbidden, Pattern: envelope.PatternDisabledAssertions, File: fs[0].path, Line: firstChange(fs[0]),
			Detail: fmt.Sprintf("the changed tests run %d assertion check(s), %d at the base", ht, bt)})
	}
	return out
}
