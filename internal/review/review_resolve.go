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

// ResolveRequest is a person settling a review whose reviewers disagreed
// and escalated to a human.
type ResolveRequest struct {
	// ID is the review's id (see ReviewReport.ReviewID).
	ID string
	// Verdict is VerdictApprove or VerdictBlock.
	Verdict string
	// By names who decides; it is recorded.
	By string
	// Config supplies the apply: section for Apply; nil means
	// DefaultReviewConfig.
	Config *Config
	// Apply integrates the change through the runtime when the decision
	// becomes merge.
	Apply bool
}

// Resolve records a human's verdict on an escalated review (its
// report in .apiary/reviews/<id>, the escalation and the decision on the
// board) and decides again. Approving settles only the reviewers'
// disagreement: the review merges only if every rule passed — the stage ran
// because they had — so a person, like a reviewer, never overrides a gate.
// A review not awaiting a human is ErrReviewNotEscalated; the report is
// returned (with the ErrReviewApply error) when applying fails.
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
	cfg := req.Config
	if cfg == nil {
		cfg = DefaultConfig()
	}
	rv := &reviewRun{opt: opt, cfg: cfg, repo: opt.Repo.At(root), root: root, id: req.ID, dir: Dir(root, req.ID),
		now: now, rnd: opt.Rand, log: opt.Logger, counts: map[string]int{}}
	if rv.log == nil {
		rv.log = slog.New(slog.DiscardHandler)
	}
	b, err := os.ReadFile(filepath.Join(rv.dir, "report.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no review %s in %s", ErrRequest, req.ID, root)
	}
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("review %s: report.json: %w", req.ID, err)
	}
	st := rep.Reviewers
	rule := rep.Rule(RuleReviewers)
	if st == nil || st.Escalation == nil || rule == nil || st.Outcome != ReviewersEscalated ||
		st.Escalation.To != EscalateHuman || st.Escalation.Resolution != "pending" {
		return nil, fmt.Errorf("%w: review %s (decision %s)", ErrNotEscalated, req.ID, rep.Decision)
	}
	esc := st.Escalation
	esc.Resolution, esc.By, esc.At = req.Verdict, strings.TrimSpace(req.By), now().UTC().Format(time.RFC3339)
	if err := claimResolution(filepath.Join(rv.dir, "resolution.json"), esc); err != nil {
		return nil, err
	}
	rule.Passed = req.Verdict == VerdictApprove
	if rule.Passed {
		st.Outcome, rule.Detail = ReviewersApproved, "the reviewers disagreed; "+esc.By+" approves"
	} else {
		st.Outcome, rule.Detail = ReviewersBlocked, "the reviewers disagreed; "+esc.By+" blocks"
	}
	rep.Decision, rep.Reasons = decide(rep.Rules), nonNil(reasons(rep.Rules))
	if err := rv.putBoard(ctx, "reviews/"+rv.id+"/escalation", esc); err != nil {
		os.Remove(filepath.Join(rv.dir, "resolution.json")) // nothing was decided: it may be retried
		return nil, err
	}
	var applyErr error
	if req.Apply && rep.Decision == Merge {
		rv.req = Request{Base: rep.BaseRef}
		rv.mergeBase, rv.head = rep.MergeBase, rep.Head
		for _, c := range rep.Changes {
			if c.Status != "" {
				rv.changes = append(rv.changes, git.Change{Status: c.Status[0], Path: c.Path})
			}
		}
		rep.Applied, applyErr = rv.apply(ctx)
	}
	if err := rv.writeReport(ctx, &rep); err != nil {
		return &rep, err
	}
	return &rep, applyErr
}

// claimResolution creates the resolution record, exclusively: of two
// people resolving the same review at once, one wins and the other gets
// ErrReviewNotEscalated.
func claimResolution(path string, esc *Escalation) error {
	b, err := json.MarshalIndent(esc, "", "  ")
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
