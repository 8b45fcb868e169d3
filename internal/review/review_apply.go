package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/runs"
)

// AppliedChange is how --apply integrated a change decided merge.
type AppliedChange struct {
	Run        string `json:"run,omitempty"` // the runtime's run id
	Branch     string `json:"branch"`
	Status     string `json:"status"` // succeeded | failed | skipped
	Commit     string `json:"commit,omitempty"`
	Integrated string `json:"integrated,omitempty"` // fast-forward | merge | reconciled
	Reason     string `json:"reason,omitempty"`
}

// applyTask is the name of the one task of an apply run.
const applyTask = "apply-review"

// apply integrates the reviewed change through the runtime: a run of one
// task whose command agent applies `git diff MERGEBASE HEAD` (three-way)
// to the integration head it is dispatched on. The runtime then does what
// it does for any task: commits the result with its trailers, runs its
// gates (write scope, forbidden patterns, the configured checks on the
// tree being integrated) and integrates by compare-and-swap — a
// fast-forward when the branch has not moved since, a three-way merge or a
// reconciliation otherwise. The review never moves a branch itself.
func (rv *reviewRun) apply(ctx context.Context) (*AppliedChange, error) {
	ac := &AppliedChange{Branch: rv.cfg.Apply.Branch}
	if ac.Branch == "" {
		if ok, err := rv.repo.BranchExists(ctx, rv.req.Base); err == nil && ok {
			ac.Branch = rv.req.Base
		} else if cur, err := rv.repo.CurrentBranch(ctx); err == nil {
			ac.Branch = cur
		} else {
			return ac, fmt.Errorf("%w: no integration branch: the base %q is not a branch and HEAD is detached", ErrApply, rv.req.Base)
		}
	}
	if len(rv.changes) == 0 {
		ac.Status, ac.Reason = "skipped", "the change is empty"
		return ac, nil
	}
	task := map[string]any{
		"id": applyTask, "objective": fmt.Sprintf("Apply the change %s..%s that apiary review %s decided to merge", rv.mergeBase, rv.head, rv.id),
		"agent": applyTask, "write_scope": []string{"."}, "estimate_s": 5, "budget": map[string]any{"wall_clock_s": 600},
	}
	if len(rv.cfg.Apply.Checks) > 0 {
		task["checks"] = rv.cfg.Apply.Checks
	}
	if rv.cfg.Apply.CheckTimeoutS > 0 {
		task["check_timeout_s"] = rv.cfg.Apply.CheckTimeoutS
	}
	script := `git diff --binary --full-index "$1" "$2" | git apply --index --3way --whitespace=nowarn`
	doc := map[string]any{
		"version": 1, "integration_branch": ac.Branch, "max_parallel": 1,
		"agents": map[string]any{applyTask: map[string]any{"kind": "command",
			"argv": []string{"/bin/sh", "-c", script, applyTask, rv.mergeBase, rv.head}}},
		"tasks": []any{task},
	}
	planData, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return ac, err
	}
	cfg := runs.Config{Repo: rv.repo, Now: rv.opt.Now, Rand: rv.opt.Rand, Logger: rv.opt.Logger, AgentGrace: rv.opt.AgentGrace}
	rep, err := runs.Start(ctx, cfg, runs.NewRun{PlanFile: "review-" + rv.id + "-apply.json", PlanData: planData})
	if rep != nil {
		ac.Run = rep.RunID
	}
	if err != nil {
		ac.Status, ac.Reason = "failed", err.Error()
		return ac, fmt.Errorf("%w: %w", ErrApply, err)
	}
	tr := rep.Task(applyTask)
	if tr == nil {
		ac.Status, ac.Reason = "failed", "the run has no "+applyTask+" task"
		return ac, fmt.Errorf("%w: %s", ErrApply, ac.Reason)
	}
	ac.Status = tr.Status
	if tr.Commit != nil {
		ac.Commit = *tr.Commit
	}
	if tr.Integrated != nil {
		ac.Integrated = *tr.Integrated
	}
	if tr.Status != string(envelope.StatusSucceeded) {
		ac.Reason = tr.Reason
		if tr.Gate != nil {
			ac.Reason = fmt.Sprintf("gate %s: %s", tr.Gate.Gate, tr.Gate.Detail)
		}
		return ac, fmt.Errorf("%w: task %s %s: %s", ErrApply, applyTask, tr.Status, ac.Reason)
	}
	return ac, nil
}

// applyPatch makes the head of a patch review: the patch applied to the
// base in a scratch checkout and committed. The commit is kept reachable
// by refs/apiary/reviews/<id>, so the reviewed head is never lost.
func (rv *reviewRun) applyPatch(ctx context.Context) (string, error) {
	abs, err := filepath.Abs(rv.req.Patch)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		return "", fmt.Errorf("%w: patch %s: not a readable file", ErrRequest, rv.req.Patch)
	}
	dir := rv.worktreeDir("patch")
	if err := rv.wt.Do(func() error { return rv.repo.WorktreeAddDetached(ctx, dir, rv.base) }); err != nil {
		return "", fmt.Errorf("review patch checkout: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
		defer cancel()
		if err := rv.wt.Do(func() error { return rv.repo.WorktreeRemove(cctx, dir) }); err != nil {
			rv.log.Warn("review: removing the patch checkout", "path", dir, "err", err)
		}
	}()
	log := filepath.Join(rv.dir, "patch.log")
	res, err := gate.RunCheck(ctx, gate.CheckCommand{
		// env -u: git must work on the checkout, whatever GIT_DIR says.
		Command: "env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE -u GIT_COMMON_DIR git apply --index --whitespace=nowarn -- " + shellQuote(abs),
		Dir:     dir, Log: log, Now: rv.now,
		Timeout: 5 * time.Minute,
	})
	if err != nil {
		return "", err
	}
	if res.Exit != 0 {
		b, _ := os.ReadFile(log)
		return "", fmt.Errorf("%w: %s to %s: %s", ErrPatch, rv.req.Patch, rv.req.Base, attempt.Clip(strings.TrimSpace(string(b)), 1000))
	}
	sig := git.Signature{Name: "apiary review", Email: "apiary@localhost", When: rv.now()}
	head, err := rv.repo.At(dir).CommitAll(ctx, git.CommitOptions{Message: "apiary review: patch " + filepath.Base(abs) + "\n", Author: sig})
	if errors.Is(err, git.ErrNothingToCommit) {
		return "", fmt.Errorf("%w: %s changes nothing", ErrPatch, rv.req.Patch)
	}
	if err != nil {
		return "", err
	}
	if err := rv.repo.UpdateRef(ctx, "refs/apiary/reviews/"+rv.id, head, "", "apiary review: patch head"); err != nil {
		return "", err
	}
	return head, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
