package gate

import (
	"fmt"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
)

// testFile is what the forbidden-pattern gate knows of one changed test
// file: its code lines before and after (nil when absent) and the patch.
type testFile struct {
	path     string
	lang     lang
	old, new []string // code lines, see codeLines
	removed  []git.Line
	added    []git.Line
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
	byLang := map[lang][]*testFile{}
	for _, f := range files {
		byLang[f.lang] = append(byLang[f.lang], f)
	}
	for _, l := range []lang{langGo, langPython, langJS} {
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
		if enabled[envelope.PatternDisabledAssertions] {
			out = append(out, disabledAssertions(fs, olds, news, rec)...)
		}
		if enabled[envelope.PatternSkipMarkers] {
			out = append(out, skipMarkers(fs, olds, news, rec)...)
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
		if f.lang == langGo {
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
