package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// ErrNotEscalated: the review is not waiting for a human.
var ErrNotEscalated = fmt.Errorf("%w: the review is not awaiting a human", ErrRequest)

// ErrRerun: the review's reviewers all failed; no review was done, and
// only running it again can settle it.
var ErrRerun = fmt.Errorf("%w: the review must be run again", ErrRequest)

// ResolveRequest is a person settling a review whose reviewers disagreed
// and escalated to a human, or whose change edits the review's rules.
type ResolveRequest struct {
	// ID is the review's id (see Report.ReviewID).
	ID string
	// Verdict is VerdictApprove or VerdictBlock.
	Verdict string
	// By names who decides; it is recorded.
	By string
	// Config supplies the apply: section for Apply (the operator's, from
	// outside the repository); nil means the file ConfigPath (default
	// review.yaml) as the review's base has it, else DefaultConfig.
	Config     *Config
	ConfigPath string
	// Apply integrates the change through the runtime when the decision
	// becomes merge.
	Apply bool
}

// resolution is the record of a person's decision, created once.
type resolution struct {
	Verdict string   `json:"verdict"`
	By      string   `json:"by"`
	At      string   `json:"at"`
	Rules   []string `json:"rules"`
}

// Resolve records a person's verdict on a review waiting for one — its
// reviewers disagreed and escalated to a human, or its change edits the
// review's rules — in its report (.apiary/reviews/<id>) and on the board,
// and decides again. The report must be authentic: its MAC verifies with
// the review key and its rules follow from its findings (ErrForged
// otherwise), so an edited or forged report.json is refused. Approving
// settles only the rules that wait for a person: a review blocked by any
// other rule cannot be resolved (ErrNotEscalated), nor one whose reviewers
// all failed (ErrRerun) — a person, like a reviewer, never overrides a
// gate, nor stands in for a review that was not done. The report is
// returned (with the ErrApply error) when applying fails.
func Resolve(ctx context.Context, opt Options, req ResolveRequest) (*Report, error) {
	switch {
	case opt.Repo == nil:
		return nil, fmt.Errorf("%w: no repository", ErrRequest)
	case req.Verdict != VerdictApprove && req.Verdict != VerdictBlock:
		return nil, fmt.Errorf("%w: verdict %q (want approve or block)", ErrRequest, req.Verdict)
	case strings.TrimSpace(req.By) == "":
		return nil, fmt.Errorf("%w: who resolves the escalation must be named", ErrRequest)
	case !rundir.ValidID(req.ID):
		return nil, fmt.Errorf("%w: review id %q", ErrRequest, req.ID)
	}
	root, err := opt.Repo.TopLevel(ctx)
	if err != nil {
		return nil, fmt.Errorf("review: finding the repository: %w", err)
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	rv := &reviewRun{opt: opt, req: Request{Config: req.Config, ConfigPath: req.ConfigPath}, repo: opt.Repo.At(root), root: root, id: req.ID,
		dir: Dir(root, req.ID), now: now, rnd: opt.Rand, log: opt.Logger, counts: map[string]int{}}
	if rv.log == nil {
		rv.log = slog.New(slog.DiscardHandler)
	}
	rep, err := rv.readReport()
	if err != nil {
		return nil, err
	}
	rv.base = rep.Base
	if err := rv.loadConfig(ctx); err != nil {
		return nil, err
	}
	var pending, blocking []string
	for _, r := range rep.Rules {
		switch {
		case r.Pending:
			pending = append(pending, r.Rule)
		case !r.Passed:
			blocking = append(blocking, r.Rule)
		}
	}
	switch {
	case rep.Next == NextRerun:
		return nil, fmt.Errorf("%w: review %s: every reviewer failed, so no review was done; run it again", ErrRerun, req.ID)
	case len(pending) == 0:
		return nil, fmt.Errorf("%w: review %s (decision %s)", ErrNotEscalated, req.ID, rep.Decision)
	case len(blocking) > 0:
		return nil, fmt.Errorf("%w: review %s is blocked by rules a person cannot settle (%s)", ErrNotEscalated, req.ID, strings.Join(blocking, ", "))
	}
	by, at := strings.TrimSpace(req.By), now().UTC().Format(time.RFC3339)
	if err := claimResolution(filepath.Join(rv.dir, "resolution.json"), resolution{Verdict: req.Verdict, By: by, At: at, Rules: pending}); err != nil {
		return nil, err
	}
	verb := "approves"
	if req.Verdict != VerdictApprove {
		verb = "blocks"
	}
	for i := range rep.Rules {
		r := &rep.Rules[i]
		if !r.Pending {
			continue
		}
		r.Pending, r.Passed, r.By, r.At = false, req.Verdict == VerdictApprove, by, at
		d := strings.TrimSuffix(r.Detail, "; escalated to a human (pending)")
		r.Detail = strings.TrimSuffix(d, ": a person must approve it") + "; " + by + " " + verb
	}
	if st := rep.Reviewers; st != nil && st.Outcome == ReviewersEscalated && st.Escalation != nil {
		esc := st.Escalation
		esc.Resolution, esc.By, esc.At = req.Verdict, by, at
		st.Outcome = ReviewersBlocked
		if req.Verdict == VerdictApprove {
			st.Outcome = ReviewersApproved
		}
		if err := rv.putBoard(ctx, "reviews/"+rv.id+"/escalation", esc); err != nil {
			os.Remove(filepath.Join(rv.dir, "resolution.json")) // nothing was decided: it may be retried
			return nil, err
		}
	}
	rep.Decision, rep.Reasons = decide(rep.Rules), nonNil(reasons(rep.Rules))
	rep.Next = nextStep(rep.Rules, rep.Reviewers)
	var applyErr error
	if req.Apply && rep.Decision == Merge {
		rv.req.Base = rep.BaseRef
		rv.mergeBase, rv.head = rep.MergeBase, rep.Head
		for _, c := range rep.Changes {
			if c.Status != "" {
				rv.changes = append(rv.changes, git.Change{Status: c.Status[0], Path: c.Path})
			}
		}
		rep.Applied, applyErr = rv.apply(ctx)
	}
	if err := rv.writeReport(ctx, rep); err != nil {
		return rep, err
	}
	return rep, applyErr
}

// readReport reads the review's report and checks that it is authentic:
// its MAC verifies with the review key (which must exist: Resolve never
// makes one), it is this review's, and its rules follow from its findings.
func (rv *reviewRun) readReport() (*Report, error) {
	b, err := rundir.ReadLimited(filepath.Join(rv.dir, "report.json"), 256<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no review %s in %s", ErrRequest, rv.id, rv.root)
	}
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%w: review %s: report.json: %v", ErrForged, rv.id, err)
	}
	if rv.key, err = loadKey(keyPath(rv.opt, rv.root), nil, false); err != nil {
		return nil, err
	}
	if err := rep.Verify(rv.key); err != nil {
		return nil, err
	}
	if rep.ReviewID != rv.id {
		return nil, fmt.Errorf("%w: the report in %s is review %s's", ErrForged, rv.dir, rep.ReviewID)
	}
	if err := rep.rederive(); err != nil {
		return nil, err
	}
	return &rep, nil
}

// claimResolution creates the resolution record, exclusively: of two
// people resolving the same review at once, one wins and the other gets
// ErrNotEscalated.
func claimResolution(path string, res resolution) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: it was resolved already (%s)", ErrNotEscalated, path)
	}
	if err != nil {
		return err
	}
	_, werr := f.Write(append(b, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return fmt.Errorf("review: recording the resolution: %w", err)
	}
	return nil
}
