package review

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git"
)

// This file holds what the review analysers share: the structured Finding
// every analyser reports, severities, and the Change they analyse. The
// analysers themselves are deterministic (no model): they read the change
// through git and the checked-out trees of its base and head, never modify
// either, and report what they see as findings; a rule outside them decides
// what the findings mean for the change.

// Severity ranks a finding, from SevInfo to SevCritical.
type Severity string

// Severities, lowest first.
const (
	SevInfo     Severity = "info"
	SevLow      Severity = "low"
	SevMedium   Severity = "medium"
	SevHigh     Severity = "high"
	SevCritical Severity = "critical"
)

var severities = []Severity{SevInfo, SevLow, SevMedium, SevHigh, SevCritical}

// Rank orders severities: 0 for info up to 4 for critical, -1 for a string
// that is not a severity.
func (s Severity) Rank() int { return slices.Index(severities, s) }

// AtLeast reports whether s ranks at or above t.
func (s Severity) AtLeast(t Severity) bool { return s.Rank() >= t.Rank() && s.Rank() >= 0 }

// ParseSeverity checks s (case-insensitively) and returns it normalized.
func ParseSeverity(s string) (Severity, error) {
	v := Severity(strings.ToLower(strings.TrimSpace(s)))
	if v.Rank() < 0 {
		return "", fmt.Errorf("%w: severity %q (want info, low, medium, high or critical)", ErrFinding, s)
	}
	return v, nil
}

// Finding kinds reported by the built-in analysers. The forbidden-pattern
// analyser reports each pattern under its own name (envelope.Pattern*).
const (
	KindSecret             = "secret"
	KindSealed             = "sealed"
	KindTestFailure        = "test-failure"
	KindBuildFailure       = "build-failure"
	KindCoverage           = "coverage"
	KindBenchmark          = "benchmark"
	KindAPIBreak           = "api-break"
	KindAPIAddition        = "api-addition"
	KindVersionBump        = "version-bump"
	KindDecision           = "decision" // a decision the change touches (info)
	KindDecisionMissing    = "decision-missing"
	KindDecisionSuperseded = "decision-superseded"
	KindDecisionStatus     = "decision-status" // a reference to a rejected or deprecated decision
	KindDecisionFormat     = "decision-format"
	// KindDecisionContradiction: the change adds what an accepted
	// decision forbids, in the paths it applies to.
	KindDecisionContradiction = "decision-contradiction"
	KindAnalyserError         = "analyser-error"
	// KindUnscanned: a changed file the secret scan could not read. A
	// skipped file is a finding, never silence.
	KindUnscanned = "unscanned"
	// KindRulesChanged: the change edits the review's own rules (its
	// configuration, the decision records); a person must approve it.
	KindRulesChanged = "rules-changed"
)

// Metric names the built-in analysers put in Finding.Metric.
const (
	MetricCoverage        = "coverage"         // total statement coverage, %
	MetricPackageCoverage = "package-coverage" // one package's coverage, %
	MetricSecPerOp        = "sec/op"           // benchmark time per op, ns
)

// Metric is the measurement behind a finding that quantifies something
// (coverage, a benchmark), so a decision rule can compare it with a
// threshold.
type Metric struct {
	Name string  `json:"name"`
	Unit string  `json:"unit,omitempty"`
	Base float64 `json:"base"`
	Head float64 `json:"head"`
	// Delta is Head − Base for coverage (percentage points) and the
	// relative change of the centers in percent for a benchmark.
	Delta float64 `json:"delta"`
	// P is a benchmark comparison's p-value. Significant: P is below
	// the analyser's alpha and the head was on the same side of the base
	// in all but at most one of the Rounds of interleaved runs (Slower
	// counts the rounds where the head was slower), so that a burst of
	// load on the machine during a few runs is not taken for a change.
	P           *float64 `json:"p,omitempty"`
	Significant bool     `json:"significant,omitempty"`
	Rounds      int      `json:"rounds,omitempty"`
	Slower      int      `json:"slower_rounds,omitempty"`
}

// Finding is one structured observation about a change. Kind, Severity,
// Evidence and Analyser are always set; File and Line locate it when it is
// about a place (File is repository-relative, Line 1-based, 0 for the whole
// file). ID is assigned by whoever stores it (the review); Cites names the
// findings this one reacts to.
type Finding struct {
	ID       string   `json:"id,omitempty"`
	Kind     string   `json:"kind"`
	Severity Severity `json:"severity"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Evidence string   `json:"evidence"`
	// Action suggests what to do about the finding; the review fills in
	// its kind's default (see DefaultAction) when an analyser gives none.
	Action    string   `json:"action,omitempty"`
	Analyser  string   `json:"analyser"`
	Metric    *Metric  `json:"metric,omitempty"`
	Decisions []string `json:"decisions,omitempty"`
	Cites     []string `json:"cites,omitempty"`
}

// ErrFinding is wrapped by every reason a finding is malformed.
var ErrFinding = errors.New("malformed finding")

// MaxEvidence bounds Finding.Evidence, in bytes; Normalize clips longer
// evidence.
const MaxEvidence = 2048

var kindRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,63}$`)

// Normalize checks f and brings it to its canonical form: kind lower case,
// severity valid, file a clean relative path, line not negative, evidence
// non-empty and clipped to MaxEvidence. It does not check Analyser, which
// the caller sets.
func (f *Finding) Normalize() error {
	f.Kind = strings.ToLower(strings.TrimSpace(f.Kind))
	if !kindRE.MatchString(f.Kind) {
		return fmt.Errorf("%w: kind %q (want [a-z0-9._/-], at most 64)", ErrFinding, f.Kind)
	}
	sev, err := ParseSeverity(string(f.Severity))
	if err != nil {
		return err
	}
	f.Severity = sev
	if f.Line < 0 {
		return fmt.Errorf("%w: line %d", ErrFinding, f.Line)
	}
	if f.File != "" {
		if !cleanRel(f.File) {
			return fmt.Errorf("%w: file %q is not a clean repository-relative path", ErrFinding, f.File)
		}
	}
	f.Evidence = clipBytes(strings.TrimSpace(f.Evidence), MaxEvidence)
	if f.Evidence == "" {
		return fmt.Errorf("%w: empty evidence", ErrFinding)
	}
	f.Action = clipBytes(strings.TrimSpace(f.Action), MaxEvidence/4)
	return nil
}

// DefaultAction suggests what to do about a finding of kind; "" for kinds
// that need nothing (info about the change).
func DefaultAction(kind string) string {
	switch kind {
	case KindSecret:
		return "remove the credential from the change and revoke it: a pushed commit keeps it in the history"
	case KindUnscanned:
		return "make the file readable to the scanner, or remove it from the change"
	case KindSealed:
		return "revert the change to the sealed path; a sealed path changes only in a change of its own that a person reviews"
	case "deleted-tests":
		return "restore the deleted test (a test renamed or moved keeps its checks and is not flagged)"
	case "disabled-assertions":
		return "restore the assertion so that as many checks run as at the base; moving a check into a table or a helper is fine"
	case "skip-markers":
		return "remove the skip; quarantine a flaky test in a change of its own that says why"
	case "emptied-tests":
		return "restore the file's tests, or delete the file in a change that says where they went"
	case "test-bypass":
		return "remove the early return, skip or dead code so that the test's assertions run"
	case KindTestFailure:
		return "make the failing test pass at the head: fix the code, or the test if the behaviour change is intended"
	case KindBuildFailure:
		return "fix the compile error at the place given"
	case KindCoverage:
		return "add tests for the code the change leaves uncovered"
	case KindBenchmark:
		return "profile the benchmark (go test -bench NAME -cpuprofile cpu.out) and remove the slowdown, or change max_bench_regression_pct in the base's review.yaml"
	case KindAPIBreak:
		return "keep the old identifier (deprecate it, add the new one beside it) or bump the module's major version"
	case KindDecisionMissing:
		return "refer to a decision that exists, or add its record under docs/decisions"
	case KindDecisionSuperseded:
		return "refer to the decision that supersedes it"
	case KindDecisionStatus:
		return "do not build on a rejected or deprecated decision: follow the accepted one, or propose a new decision record"
	case KindDecisionFormat:
		return "fix the record's heading or Status: line (see docs/decisions/README.md)"
	case KindDecisionContradiction:
		return "follow the decision, or supersede it with a new decision record in a change of its own that a person approves"
	case KindAnalyserError:
		return "fix what made the analyser fail (see its log) and re-run the review"
	case KindCheckoutModified:
		return "re-run the review; an analyser or reviewer that writes to its read-only checkout is misconfigured or hostile"
	case KindRulesChanged:
		return "a person approves the rule change (apiary review resolve ID approve), or it goes in a change of its own"
	case KindObjection:
		return "answer the reviewer's objection in the change"
	}
	return ""
}

// cleanRel reports whether p is a clean, slash-separated path inside the
// repository.
func cleanRel(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) || !utf8.ValidString(p) {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// clipBytes cuts s to at most n bytes on a rune boundary, marking the cut.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Where renders the finding's location: "file:line", "file", or "".
func (f *Finding) Where() string {
	if f.File == "" {
		return ""
	}
	if f.Line > 0 {
		return f.File + ":" + strconv.Itoa(f.Line)
	}
	return f.File
}

// Change is what an analyser analyses: the commits Base and Head of Repo,
// the paths that differ, and read-only checkouts of both. Analysers must
// not write to BaseDir or HeadDir; Scratch is theirs.
type Change struct {
	Repo    *git.Repo
	Base    string // commit the change is relative to
	Head    string // commit under review
	Changes []git.Change
	// HeadDir and BaseDir hold Head and Base checked out. BaseDir may be
	// empty for analysers that do not need it (see NeedsBase).
	HeadDir, BaseDir string
	// Scratch is a writable directory for the analyser's logs and files.
	Scratch string
	// Env is the environment of the commands analysers run (go); nil
	// inherits the process's.
	Env []string
}

// Analyser examines a change and reports findings. An error is for
// infrastructure failures (git failing, a tool that cannot start, ctx
// ending); problems with the change are findings.
type Analyser interface {
	Analyse(ctx context.Context, c *Change) ([]Finding, error)
}

// NeedsBase is implemented by analysers that read Change.BaseDir.
type NeedsBase interface {
	NeedsBase() bool
}

// Quiet is implemented by analysers that measure time (benchmarks): the
// review runs them after the round's other analysers, one at a time, so
// that those do not slow one side of a comparison.
type Quiet interface {
	Quiet() bool
}

// ErrAnalyser wraps infrastructure failures of the built-in analysers.
var ErrAnalyser = errors.New("analyser failed")

// addedLines returns, per path changed in c, the head-side line numbers the
// change adds.
func addedLines(ctx context.Context, c *Change) (map[string]map[int]bool, error) {
	patches, err := c.Repo.DiffPatch(ctx, c.Base, c.Head)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]bool{}
	for _, p := range patches {
		if p.NewPath == "" || p.Binary {
			continue
		}
		m := out[p.NewPath]
		if m == nil {
			m = map[int]bool{}
			out[p.NewPath] = m
		}
		for _, l := range p.Lines {
			if l.Op == '+' {
				m[l.NewLine] = true
			}
		}
	}
	return out, nil
}

// SortFindings orders findings by severity (highest first), then file,
// line, kind and evidence, so reports are stable.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if d := b.Severity.Rank() - a.Severity.Rank(); d != 0 {
			return d
		}
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Evidence, b.Evidence)
	})
}

// clipLine bounds one line of input quoted in an error.
func clipLine(s string) string { return attempt.Clip(strings.TrimSpace(s), 120) }
