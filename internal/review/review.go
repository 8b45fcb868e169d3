package review

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Review decisions.
const (
	Merge = "merge"
	Block = "block"
)

// Review errors; each wraps ErrFailed.
var (
	ErrFailed = errors.New("review failed")
	// ErrRequest: the request is incomplete or contradictory.
	ErrRequest = fmt.Errorf("%w: bad request", ErrFailed)
	// ErrPatch: the patch does not apply to the base.
	ErrPatch = fmt.Errorf("%w: the patch does not apply", ErrFailed)
	// ErrApply: the change was to be merged but the runtime did not
	// integrate it.
	ErrApply = fmt.Errorf("%w: applying the change failed", ErrFailed)
)

// Board is the part of a board the review uses: findings are stored
// under "reviews/<id>/findings/<analyser>/<n>" and read back by prefix for
// the subscriptions round. *board.Store implements it.
type Board interface {
	Put(ctx context.Context, key string, value []byte, lease board.LeaseID) (int64, error)
	List(ctx context.Context, prefix string) ([]board.KV, int64, error)
}

var _ Board = (*board.Store)(nil)

// Options is how reviews are executed; the zero value of every field
// but Repo is a sensible default.
type Options struct {
	// Repo is the repository's main working tree. Required.
	Repo *git.Repo
	// Board stores the findings; nil keeps them on disk only (the
	// subscriptions round then reads them from memory).
	Board Board
	// Secrets is an extra set of secret detectors for the secret-scan
	// analyser, beside its built-in ones; nil: the built-in ones only.
	Secrets SecretScanner
	// Models gives agent analysers and reviewers model access.
	Models attempt.ModelAccess
	// AgentBin maps an agent kind to its executable (see Config.AgentBin).
	AgentBin map[string]string
	// AgentGrace is the SIGTERM→SIGKILL grace of agents.
	AgentGrace time.Duration
	// MaxParallel bounds the analysers running at once; 0 means 4.
	MaxParallel int
	// Env is the environment of the built-in analysers' commands (go);
	// nil inherits the process's.
	Env []string
	// OnAnalyser, if set, sees every analyser, reviewer and skipped
	// analyser as it finishes; calls are serialized.
	OnAnalyser func(AnalyserRun)
	// KeyFile holds the review key that authenticates reports (created
	// on first use); "" means .apiary/review.key in the repository.
	KeyFile string
	// TempDir is where review tasks get their private directories; ""
	// means the system's temporary directory.
	TempDir string
	// Now and Rand drive ids, timestamps and durations.
	Now    func() time.Time
	Rand   io.Reader
	Logger *slog.Logger
}

// Request is one change to review.
type Request struct {
	// ID names the review; "" generates one (see NewRunID).
	ID string
	// Base is the revision the change is judged against (required); the
	// change is diffed from the merge base of Base and the head.
	Base string
	// Head is the revision under review; or Patch names a patch file
	// (git diff format) that is applied to Base to make the head.
	Head  string
	Patch string
	// Tags select analysers (When.Tags) besides those in the change's
	// "Apiary-Tags:" commit trailers.
	Tags []string
	// Config is the review configuration, given by the operator from
	// outside the repository; nil means the file ConfigPath (default
	// review.yaml) as the base commit has it, else DefaultConfig. The
	// change under review never supplies its own rules.
	Config     *Config
	ConfigPath string
	// Apply integrates the change through the runtime when the decision
	// is merge.
	Apply bool
}

// Dir returns the directory of review id in the repository at root.
func Dir(root, id string) string { return rundir.State(root, "reviews", id) }

// reviewRun is one review in progress. Fields after mu are guarded by it.
type reviewRun struct {
	opt       Options
	req       Request
	cfg       *Config
	repo      *git.Repo
	root, id  string
	dir       string
	wt        *rundir.WorktreeLock
	now       func() time.Time
	rnd       io.Reader
	log       *slog.Logger
	base      string // Base resolved
	mergeBase string // the change's base: merge base of base and head
	head      string
	changes   []git.Change
	paths     []string
	tags      []string
	headDir   string
	baseDir   string
	started   time.Time
	cfgSource string // where the configuration came from
	priv      string // root of the tasks' private directories
	key       []byte // authenticates the report

	mu       sync.Mutex
	findings []Finding
	counts   map[string]int // findings per analyser, for ids
	runs     []AnalyserRun
	tainted  []string                     // agent tasks that wrote to their checkouts, not yet reported
	held     map[string]map[string][]byte // task → files, until published
}

// Run reviews one change and returns its report, which is also written
// to .apiary/reviews/<id>/report.{json,md}. A blocked change is a report
// with Decision block, not an error; errors are for bad requests and
// infrastructure failures (git, the board), and for --apply failing to
// integrate a change decided merge (the report is returned too).
func Run(ctx context.Context, opt Options, req Request) (*Report, error) {
	rv, err := newReviewRun(ctx, opt, req)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(rv.priv)
	defer rv.removeWorktrees()
	defer func() {
		if perr := rv.publish(); perr != nil {
			rv.log.Warn("review: publishing task files", "err", perr)
		}
	}()
	if err := rv.checkout(ctx); err != nil {
		return nil, err
	}
	if fs := rv.rulesChanged(); len(fs) > 0 {
		if _, err := rv.addFindings(ctx, reviewSelf, fs, nil); err != nil {
			return nil, err
		}
	}
	first, second := rv.selectAnalysers()
	if err := rv.runRound(ctx, first, 1, nil); err != nil {
		return nil, err
	}
	if _, err := rv.checkIntact(ctx, "round 1"); err != nil {
		return nil, err
	}
	if err := rv.publish(); err != nil {
		return nil, err
	}
	if err := rv.reactions(ctx, second); err != nil {
		return nil, err
	}
	if _, err := rv.checkIntact(ctx, "round 2"); err != nil {
		return nil, err
	}
	if err := rv.publish(); err != nil {
		return nil, err
	}
	rep := rv.report()
	if onlyPending(rep.Rules) && rv.cfg.Reviewers != nil {
		if err := rv.adversarial(ctx, rep); err != nil {
			return nil, err
		}
		ids, err := rv.checkIntact(ctx, "the reviewer stage")
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			rep.Findings = rv.currentFindings()
			rep.Rules = append(rep.Rules, RuleResult{Rule: RuleIntegrity, Findings: ids,
				Detail: "a reviewer wrote to its read-only checkout"})
		}
		if err := rv.publish(); err != nil {
			return nil, err
		}
	}
	rep.Decision, rep.Reasons = decide(rep.Rules), nonNil(reasons(rep.Rules))
	rep.Next = nextStep(rep.Rules, rep.Reviewers)
	rv.removeWorktrees()
	var applyErr error
	if req.Apply && rep.Decision == Merge {
		rep.Applied, applyErr = rv.apply(ctx)
	}
	rep.WallS = rv.now().Sub(rv.started).Seconds()
	if err := rv.save(ctx, rep); err != nil {
		return rep, err
	}
	return rep, applyErr
}

func newReviewRun(ctx context.Context, opt Options, req Request) (*reviewRun, error) {
	switch {
	case opt.Repo == nil:
		return nil, fmt.Errorf("%w: no repository", ErrRequest)
	case req.Base == "":
		return nil, fmt.Errorf("%w: no base revision", ErrRequest)
	case (req.Head == "") == (req.Patch == ""):
		return nil, fmt.Errorf("%w: give exactly one of a head revision and a patch", ErrRequest)
	}
	rv := &reviewRun{opt: opt, req: req, now: opt.Now, rnd: opt.Rand, log: opt.Logger, counts: map[string]int{},
		held: map[string]map[string][]byte{}}
	if rv.now == nil {
		rv.now = time.Now
	}
	if rv.rnd == nil {
		rv.rnd = rand.Reader
	}
	if rv.log == nil {
		rv.log = slog.New(slog.DiscardHandler)
	}
	rv.started = rv.now()
	root, err := opt.Repo.TopLevel(ctx)
	if err != nil {
		return nil, fmt.Errorf("review: finding the repository: %w", err)
	}
	rv.root, rv.repo = root, opt.Repo.At(root)
	rv.id = req.ID
	if rv.id == "" {
		if rv.id, err = rundir.NewID(rv.now(), rv.rnd); err != nil {
			return nil, err
		}
	}
	if !rundir.ValidID(rv.id) {
		return nil, fmt.Errorf("%w: review id %q", ErrRequest, rv.id)
	}
	rv.dir = Dir(root, rv.id)
	if _, err := os.Stat(rv.dir); err == nil {
		return nil, fmt.Errorf("%w: review %s already exists", ErrRequest, rv.id)
	}
	if err := rundir.Init(root); err != nil {
		return nil, err
	}
	if rv.key, err = loadKey(keyPath(opt, root), rv.rnd, true); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(rv.dir, 0o755); err != nil {
		return nil, err
	}
	if err := rv.privateRoot(); err != nil {
		return nil, err
	}
	rv.wt = rundir.NewWorktreeLock(root)
	return rv, nil
}

// selectAnalysers returns the analysers the change selects: those of the
// first round, and the subscribers that may react in the second.
func (rv *reviewRun) selectAnalysers() (first, second []*AnalyserConfig) {
	for i := range rv.cfg.Analysers {
		a := &rv.cfg.Analysers[i]
		if !a.When.selected(rv.paths, rv.tags) {
			continue
		}
		if len(a.Subscribe) > 0 {
			second = append(second, a)
		} else {
			first = append(first, a)
		}
	}
	return first, second
}

// skipped records the analysers the change did not select.
func (rv *reviewRun) skippedRuns() []AnalyserRun {
	var out []AnalyserRun
	for i := range rv.cfg.Analysers {
		a := &rv.cfg.Analysers[i]
		if !a.When.selected(rv.paths, rv.tags) {
			out = append(out, AnalyserRun{Name: a.Name, Kind: a.kind(), Uses: a.uses(), Status: "skipped",
				Reason: "not selected: the change matches none of its when: rules"})
		}
	}
	return out
}

// runRound runs analysers in parallel, at most MaxParallel at once, and
// waits for all of them; then the quiet ones (benchmarks), one at a time.
// inputs, for a reaction round, maps an analyser to the findings it
// reacts to.
func (rv *reviewRun) runRound(ctx context.Context, as []*AnalyserConfig, round int, inputs map[string][]Finding) error {
	var loud, quiet []*AnalyserConfig
	for _, a := range as {
		if rv.isQuiet(a) {
			quiet = append(quiet, a)
		} else {
			loud = append(loud, a)
		}
	}
	if err := rv.runParallel(ctx, loud, round, inputs); err != nil {
		return err
	}
	for _, a := range quiet {
		if err := rv.runAnalyser(ctx, a, round, inputs[a.Name]); err != nil {
			return err
		}
	}
	return nil
}

// isQuiet reports whether a is a built-in that measures time.
func (rv *reviewRun) isQuiet(a *AnalyserConfig) bool {
	if a.Builtin == "" {
		return false
	}
	an, err := rv.builtin(a)
	if err != nil {
		return false
	}
	q, ok := an.(Quiet)
	return ok && q.Quiet()
}

// runParallel runs analysers in parallel, at most MaxParallel at once.
func (rv *reviewRun) runParallel(ctx context.Context, as []*AnalyserConfig, round int, inputs map[string][]Finding) error {
	par := rv.opt.MaxParallel
	if par <= 0 {
		par = 4
	}
	sem := make(chan struct{}, par)
	errs := make([]error, len(as))
	var wg sync.WaitGroup
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			errs[i] = rv.runAnalyser(ctx, a, round, inputs[a.Name])
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// reactions is the subscriptions round: each subscriber whose subscribed
// findings exist (read back from the board) runs once with them. Findings
// made in this round trigger nothing: the round is bounded.
func (rv *reviewRun) reactions(ctx context.Context, subs []*AnalyserConfig) error {
	if len(subs) == 0 {
		return nil
	}
	all, err := rv.storedFindings(ctx)
	if err != nil {
		return err
	}
	inputs := map[string][]Finding{}
	var run []*AnalyserConfig
	for _, a := range subs {
		var in []Finding
		for _, f := range all {
			if subscribed(a.Subscribe, f) {
				in = append(in, f)
			}
		}
		if len(in) == 0 {
			rv.record(AnalyserRun{Name: a.Name, Kind: a.kind(), Uses: a.uses(), Round: 2, Status: "skipped",
				Reason: "no finding it subscribes to (" + strings.Join(a.Subscribe, ", ") + ")"})
			continue
		}
		inputs[a.Name] = in
		run = append(run, a)
	}
	return rv.runRound(ctx, run, 2, inputs)
}

// subscribed reports whether a subscription list selects f.
func subscribed(subs []string, f Finding) bool {
	for _, s := range subs {
		if name, ok := strings.CutPrefix(s, "analyser:"); ok {
			if f.Analyser == name {
				return true
			}
		} else if f.Kind == s {
			return true
		}
	}
	return false
}

// findingsPrefix is the board prefix of the review's findings.
func (rv *reviewRun) findingsPrefix() string { return "reviews/" + rv.id + "/findings/" }

// storedFindings reads the review's findings back from the board (or from
// memory without one), in key order.
func (rv *reviewRun) storedFindings(ctx context.Context) ([]Finding, error) {
	if rv.opt.Board == nil {
		rv.mu.Lock()
		defer rv.mu.Unlock()
		return slices.Clone(rv.findings), nil
	}
	kvs, _, err := rv.opt.Board.List(ctx, rv.findingsPrefix())
	if err != nil {
		return nil, fmt.Errorf("review: reading findings from the board: %w", err)
	}
	out := make([]Finding, 0, len(kvs))
	for _, kv := range kvs {
		var f Finding
		if err := json.Unmarshal(kv.Value, &f); err != nil {
			return nil, fmt.Errorf("review: finding %s on the board: %w", kv.Key, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// addFindings normalizes an analyser's findings, numbers them, applies the
// configured severity overrides and default actions, and stores them on
// the board (and, when its stage is over, in the task's folder). A
// malformed finding becomes an analyser-error finding.
func (rv *reviewRun) addFindings(ctx context.Context, name string, fs []Finding, cites []string) ([]Finding, error) {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if err := f.Normalize(); err != nil {
			f = Finding{Kind: KindAnalyserError, Severity: SevHigh, Evidence: "malformed finding: " + err.Error()}
		}
		if s, ok := rv.cfg.Decision.Severity[f.Kind]; ok {
			f.Severity = s
		}
		if len(f.Cites) == 0 {
			f.Cites = cites
		}
		if f.Action == "" {
			f.Action = DefaultAction(f.Kind)
		}
		f.Analyser = name
		out = append(out, f)
	}
	rv.mu.Lock()
	first := rv.counts[name] + 1
	for i := range out {
		rv.counts[name]++
		out[i].ID = fmt.Sprintf("%s/%d", name, rv.counts[name])
	}
	rv.findings = append(rv.findings, out...)
	var mine []Finding // everything this analyser reported so far
	for _, f := range rv.findings {
		if f.Analyser == name {
			mine = append(mine, f)
		}
	}
	rv.mu.Unlock()
	if rv.opt.Board != nil {
		for i, f := range out {
			b, err := json.Marshal(f)
			if err != nil {
				return nil, err
			}
			key := fmt.Sprintf("%s%s/%04d", rv.findingsPrefix(), name, first+i)
			if _, err := rv.opt.Board.Put(ctx, key, b, board.NoLease); err != nil {
				return nil, fmt.Errorf("review: storing finding %s on the board: %w", f.ID, err)
			}
		}
	}
	if err := rv.holdJSON(name, "findings.json", nonNil(mine)); err != nil {
		return nil, err
	}
	return out, nil
}

// record adds an analyser run to the report and tells OnAnalyser.
func (rv *reviewRun) record(r AnalyserRun) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.runs = append(rv.runs, r)
	if rv.opt.OnAnalyser != nil {
		rv.opt.OnAnalyser(r)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
