package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// GradedCheck is one check of the grading and how it ended on the arm's
// work.
type GradedCheck struct {
	GradingCheck
	CheckResult
	Passed bool `json:"passed"`
}

// grade assembles the arm's work tree and runs every check of the
// grading on it, one by one, the same checks for both arms.
//
// The work tree is the integration branch's final tree with, laid over it,
// the last candidate of every plan task that was not integrated (the paths
// it changed inside its write scope). So the single agent's work, which
// the runtime integrates or rejects as one, is graded check by check just
// as the swarm's is, and identical work gets identical scores whichever
// arm did it. Whether the work reached the branch is what acceptance adds:
// a task is accepted when the plan task that did it was integrated and
// every check of its own passed.
func grade(ctx context.Context, ts *TaskSet, o Options, arm Arm, rep *runs.Report, evs []rundir.Event, base string, ar *ArmResult) error {
	work := filepath.Join(base, "work")
	if err := o.Runtime.Export(ctx, ar.Repo, "refs/heads/"+rep.IntegrationBranch, work); err != nil {
		return err
	}
	run := rundir.Open(ar.Repo, rep.RunID)
	planTasks := []string{SingleTaskID}
	if arm == Swarm {
		planTasks = planTasks[:0]
		for _, t := range ts.Tasks {
			planTasks = append(planTasks, t.ID)
		}
	}
	integrated := map[string]bool{}
	for _, name := range planTasks {
		tr := rep.Task(name)
		integrated[name] = tr != nil && tr.Status == "succeeded" && tr.Integrated != nil
		if integrated[name] {
			continue
		}
		overlaid, err := overlayCandidate(ctx, o, ts, arm, ar.Repo, run, evs, name, base, work)
		if err != nil {
			return err
		}
		if overlaid {
			ar.FromCandidates = append(ar.FromCandidates, name)
		}
	}

	timeout := time.Duration(ts.CheckTimeoutS * float64(time.Second))
	logs := filepath.Join(base, "grading-logs")
	hiddenTrees := map[string]string{}
	for i, gc := range ts.Grading() {
		dir := work
		if gc.Kind == Hidden {
			if dir = hiddenTrees[gc.Task]; dir == "" {
				dir = filepath.Join(base, "hidden-"+gc.Task)
				if err := copyTree(work, dir); err != nil {
					return err
				}
				if t := ts.Task(gc.Task); t != nil {
					if _, err := os.Stat(t.Hidden); err == nil {
						if err := copyTree(t.Hidden, dir); err != nil {
							return err
						}
					}
				}
				hiddenTrees[gc.Task] = dir
			}
		}
		r, err := o.Runtime.Check(ctx, Check{Command: gc.Command, Dir: dir, Timeout: timeout,
			Log: filepath.Join(logs, fmt.Sprintf("check-%d.log", i+1))})
		if err != nil {
			return err
		}
		ar.Checks = append(ar.Checks, GradedCheck{GradingCheck: gc, CheckResult: r, Passed: r.Exit == 0 && !r.TimedOut})
	}

	for _, c := range ar.Checks {
		ar.ChecksTotal++
		if c.Passed {
			ar.ChecksPassed++
		}
	}
	if ar.ChecksTotal > 0 {
		ar.Quality = float64(ar.ChecksPassed) / float64(ar.ChecksTotal)
	}
	for _, t := range ts.Tasks {
		name := t.ID
		if arm == Single {
			name = SingleTaskID
		}
		out := TaskOutcome{ID: t.ID, GateStatus: "missing", Integrated: integrated[name]}
		if tr := rep.Task(name); tr != nil {
			out.GateStatus = tr.Status
			if tr.Gate != nil {
				out.GateReason = strings.TrimSpace(tr.Gate.Gate + " " + tr.Gate.Pattern + " " + tr.Gate.Detail)
			}
		}
		for _, c := range ar.Checks {
			if c.Task == t.ID {
				out.ChecksTotal++
				if c.Passed {
					out.ChecksPassed++
				}
			}
		}
		out.Accepted = out.Integrated && out.ChecksPassed == out.ChecksTotal
		if out.Accepted {
			ar.Accepted++
		}
		o.progress("eval: %s: %s: %s, its checks %d/%d", arm, t.ID, integratedText(out.Integrated), out.ChecksPassed, out.ChecksTotal)
		ar.Tasks = append(ar.Tasks, out)
	}
	o.progress("eval: %s: %d/%d checks passed", arm, ar.ChecksPassed, ar.ChecksTotal)
	return nil
}

func integratedText(ok bool) string {
	if ok {
		return "integrated"
	}
	return "not integrated"
}

// overlayCandidate lays the last candidate commit of plan task name (from
// its attempt_finished events) over work: the paths its receipt lists as
// changed that lie inside the task's write scope, copied from the
// candidate or removed when the candidate deleted them. It reports false
// when the task left no candidate.
func overlayCandidate(ctx context.Context, o Options, ts *TaskSet, arm Arm, repo string, run rundir.Run, evs []rundir.Event, name, base, work string) (bool, error) {
	candidate := ""
	for _, ev := range evs {
		if ev.Kind == rundir.EvAttemptFinished && ev.Task == name && ev.Commit != "" {
			candidate = ev.Commit
		}
	}
	if candidate == "" {
		return false, nil
	}
	var scope []string
	if arm == Single {
		for _, t := range ts.Tasks {
			scope = append(scope, t.WriteScope...)
		}
	} else if t := ts.Task(name); t != nil {
		scope = t.WriteScope
	}
	tree := filepath.Join(base, "candidate-"+name)
	if err := o.Runtime.Export(ctx, repo, candidate, tree); err != nil {
		return false, err
	}
	var paths []string
	rc, err := run.Task(name).Receipt()
	if err != nil {
		return false, err
	}
	if rc != nil && len(rc.ChangedPaths) > 0 {
		paths = rc.ChangedPaths
	} else {
		// No receipt of what changed: every file of the candidate in scope.
		files, err := readTree(tree)
		if err != nil {
			return false, err
		}
		paths = sortedKeys(files)
	}
	for _, p := range paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) || !slices.ContainsFunc(scope, func(s string) bool { return gate.InScope(p, s) }) {
			continue
		}
		src, dst := filepath.Join(tree, filepath.FromSlash(p)), filepath.Join(work, filepath.FromSlash(p))
		b, err := os.ReadFile(src)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, err
			}
			continue
		case err != nil:
			return false, err
		}
		info, err := os.Stat(src)
		if err != nil {
			return false, err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()|0o200); err != nil {
			return false, err
		}
	}
	return true, nil
}
