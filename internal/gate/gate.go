// Package gate runs apiary's invariant gates on a candidate commit: the
// changed paths must lie inside the task's write scope and outside every
// sealed path; the diff must not match a forbidden pattern (deleted tests,
// disabled assertions, added skip markers, emptied test files — for Go,
// Python and JS/TS test files — and, for Go, tests that bypass their own
// assertions: see bypass.go); every check command must exit 0 within its
// timeout in a scratch worktree of the candidate. Gates are run by apiary,
// never by the agent, and each failure is a typed reason naming the gate,
// the file and the line.
package gate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
)

// Gate names, as in envelope.GateReason.Gate.
const (
	GateScope     = "scope"
	GateSealed    = "sealed"
	GateForbidden = "forbidden"
	GateCheck     = "check"
)

// Sentinel errors matched by Failure.Is.
var (
	ErrScope     = errors.New("gate: change outside the write scope")
	ErrSealed    = errors.New("gate: change to a sealed path")
	ErrForbidden = errors.New("gate: forbidden diff pattern")
	ErrCheck     = errors.New("gate: check command failed")
	// ErrUnknownPattern: Spec.Forbidden names a pattern that is not built in.
	ErrUnknownPattern = errors.New("gate: unknown forbidden pattern")
)

// Failure is one reason a candidate is rejected.
type Failure struct {
	Gate    string // GateScope, GateSealed, GateForbidden or GateCheck
	Pattern string // for GateForbidden: the pattern's name
	File    string // repository path; for GateCheck, the log file
	Line    int    // 1-based; 0 when the failure is about the whole file
	Detail  string
}

func (f Failure) Error() string {
	loc := f.File
	if f.Line > 0 {
		loc += ":" + strconv.Itoa(f.Line)
	}
	name := f.Gate
	if f.Pattern != "" {
		name += "/" + f.Pattern
	}
	return fmt.Sprintf("gate %s: %s: %s", name, loc, f.Detail)
}

// Is maps a failure to the sentinel of its gate.
func (f Failure) Is(target error) bool {
	switch f.Gate {
	case GateScope:
		return target == ErrScope
	case GateSealed:
		return target == ErrSealed
	case GateForbidden:
		return target == ErrForbidden
	case GateCheck:
		return target == ErrCheck
	}
	return false
}

// Reason returns the failure as a receipt's typed reason.
func (f Failure) Reason() envelope.GateReason {
	return envelope.GateReason{Gate: f.Gate, Pattern: f.Pattern, File: f.File, Line: f.Line, Detail: clipDetail(f.Detail)}
}

func clipDetail(s string) string {
	if r := []rune(s); len(r) > 2048 {
		return string(r[:2047]) + "…"
	}
	return s
}

// Spec is what the gates enforce; see SpecFromEnvelope.
type Spec struct {
	WriteScope []string // path prefixes the candidate may change ("." = all)
	Sealed     []string // paths it may not change
	// Forbidden patterns: nil means every built-in pattern; an empty,
	// non-nil slice disables the gate.
	Forbidden    []string
	Checks       []string      // shell commands that must exit 0
	CheckTimeout time.Duration // per check; 0: none beyond ctx
	LogDir       string        // where check-<n>.log files go
	Env          []string      // environment of checks; nil inherits
	// RunChecksAfterFailure runs the checks even when a scope or pattern
	// gate already failed (off by default: the candidate is rejected anyway).
	RunChecksAfterFailure bool
	// Now is the clock for check durations; nil means time.Now.
	Now func() time.Time
}

// SpecFromEnvelope derives the gates' spec from an envelope's authority and
// completion; check logs go to logDir.
func SpecFromEnvelope(e *envelope.Envelope, logDir string) Spec {
	return Spec{
		WriteScope:   e.Authority.WriteScope,
		Sealed:       e.Completion.Sealed,
		Forbidden:    e.Completion.Forbidden,
		Checks:       e.Completion.Checks,
		CheckTimeout: time.Duration(e.Completion.CheckTimeoutS * float64(time.Second)),
		LogDir:       logDir,
	}
}

// Candidate is the commit under test.
type Candidate struct {
	Repo   *git.Repo // the repository (any of its worktrees)
	Base   string    // the commit the task started from
	Commit string    // the candidate commit
	// Dir is a scratch worktree with Commit checked out, where checks run.
	// It may be empty when the spec has no checks.
	Dir string
}

// Report is the outcome of the gates on one candidate.
type Report struct {
	Changes  []git.Change
	Failures []Failure
	Checks   []envelope.CheckResult
}

// Passed reports whether every gate passed.
func (r *Report) Passed() bool { return len(r.Failures) == 0 }

// Err returns nil if every gate passed, else the failures joined.
func (r *Report) Err() error {
	errs := make([]error, len(r.Failures))
	for i, f := range r.Failures {
		errs[i] = f
	}
	return errors.Join(errs...)
}

// Run runs the gates in order — scope and sealed paths, forbidden patterns,
// check commands — and reports every failure. The returned error is for
// infrastructure problems only (git failing, ctx ending, a check that cannot
// start); a rejected candidate is a Report with failures.
func Run(ctx context.Context, spec Spec, c Candidate) (*Report, error) {
	patterns, err := enabledPatterns(spec.Forbidden)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	if rep.Changes, err = c.Repo.DiffNameStatus(ctx, c.Base, c.Commit); err != nil {
		return nil, err
	}
	rep.Failures = append(rep.Failures, scopeFailures(rep.Changes, spec.WriteScope, spec.Sealed)...)
	if len(patterns) > 0 {
		fs, err := Forbidden(ctx, c.Repo, c.Base, c.Commit, rep.Changes, patterns)
		if err != nil {
			return nil, err
		}
		rep.Failures = append(rep.Failures, fs...)
	}
	if len(spec.Checks) == 0 || len(rep.Failures) > 0 && !spec.RunChecksAfterFailure {
		return rep, nil
	}
	if c.Dir == "" {
		return nil, fmt.Errorf("gate: %d check(s) but no scratch worktree", len(spec.Checks))
	}
	for i, cmd := range spec.Checks {
		res, err := RunCheck(ctx, CheckCommand{
			Command: cmd, Dir: c.Dir, Timeout: spec.CheckTimeout, Env: spec.Env, Now: spec.Now,
			Log: filepath.Join(spec.LogDir, fmt.Sprintf("check-%d.log", i)),
		})
		if err != nil {
			return nil, err
		}
		rep.Checks = append(rep.Checks, res)
		if res.Exit != 0 {
			rep.Failures = append(rep.Failures, checkFailure(res, spec.CheckTimeout))
		}
	}
	return rep, nil
}

// enabledPatterns resolves Spec.Forbidden.
func enabledPatterns(names []string) (map[string]bool, error) {
	if names == nil {
		names = envelope.BuiltinPatterns()
	}
	out := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(envelope.BuiltinPatterns(), n) {
			return nil, fmt.Errorf("%w: %q", ErrUnknownPattern, n)
		}
		out[n] = true
	}
	return out, nil
}

// Forbidden checks the change from base to commit for the enabled patterns
// (a set of envelope.Pattern* names). changes are the paths that differ, as
// DiffNameStatus reports them.
func Forbidden(ctx context.Context, repo *git.Repo, base, commit string, changes []git.Change, enabled map[string]bool) ([]Failure, error) {
	var paths []string
	files := map[string]*testFile{}
	for _, ch := range changes {
		l := TestFileLang(ch.Path)
		if l == LangNone {
			continue
		}
		paths = append(paths, ch.Path)
		files[ch.Path] = &testFile{path: ch.Path, lang: l}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	olds, err := repo.ReadBlobs(ctx, base, paths)
	if err != nil {
		return nil, err
	}
	news, err := repo.ReadBlobs(ctx, commit, paths)
	if err != nil {
		return nil, err
	}
	patches, err := repo.DiffPatch(ctx, base, commit, literal(paths)...)
	if err != nil {
		return nil, err
	}
	for _, p := range patches {
		for _, side := range []string{p.OldPath, p.NewPath} {
			f := files[side]
			if f == nil {
				continue
			}
			for _, l := range p.Lines {
				if l.Op == '-' && side == p.OldPath {
					f.removed = append(f.removed, l)
				}
				if l.Op == '+' && side == p.NewPath {
					f.added = append(f.added, l)
				}
			}
			break
		}
	}
	list := make([]*testFile, 0, len(paths))
	for _, p := range paths {
		f := files[p]
		if b, ok := olds[p]; ok {
			f.old, f.oldSrc = codeLines(string(b), f.lang), b
		}
		if b, ok := news[p]; ok {
			f.new, f.newSrc = codeLines(string(b), f.lang), b
		}
		list = append(list, f)
	}
	return detectForbidden(list, enabled), nil
}

// literal turns paths into literal pathspecs.
func literal(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = ":(literal)" + p
	}
	return out
}
