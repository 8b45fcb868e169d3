package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TrailerFence records the fencing token of the claim a commit was made
// under; TrailerWorker the worker.
const (
	TrailerFence  = "Apiary-Fence"
	TrailerWorker = "Apiary-Worker"
)

// candidateRef is where a worker pushes a candidate on the remote.
func candidateRef(run, name string, token int64) string {
	return "refs/heads/apiary/" + run + "/" + name + "-" + strconv.FormatInt(token, 10)
}

// mergeRepo is where the merge role computes merges: a bare clone of the
// remote, whose integration branch it moves by a push with a lease — or,
// when the remote is a local repository with a working tree (one machine),
// that repository itself, whose branch it moves by update-ref.
type mergeRepo struct {
	repo   *git.Repo
	direct bool
	remote string
	branch string
	ref    string // the integration ref in repo
	trees  string // scratch worktrees go here
}

func isWorkingRepo(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, ".git"))
	return err == nil && (st.IsDir() || st.Mode().IsRegular())
}

func openMergeRepo(ctx context.Context, run *layout.Record, cfg *MergeConfig) (*mergeRepo, error) {
	m := &mergeRepo{remote: run.Remote, branch: run.IntegrationBranch}
	if isWorkingRepo(run.Remote) {
		m.direct, m.repo, m.ref = true, git.New(run.Remote, cfg.Git), "refs/heads/"+run.IntegrationBranch
		m.trees = filepath.Join(run.Remote, rundir.StateDir, "worktrees", run.Run)
		return m, nil
	}
	dir := filepath.Join(cfg.Dir, run.Run, "merge.git")
	m.trees = filepath.Join(cfg.Dir, run.Run, "trees")
	m.ref = "refs/remotes/origin/" + run.IntegrationBranch
	if _, err := os.Stat(dir); err == nil {
		m.repo = git.New(dir, cfg.Git)
		return m, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if _, err := git.Clone(ctx, run.Remote, tmp, true, cfg.Git); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	m.repo = git.New(dir, cfg.Git)
	return m, nil
}

// head returns the integration branch's current value on the remote.
func (r *mergeRepo) head(ctx context.Context) (string, error) {
	if !r.direct {
		if err := r.repo.Fetch(ctx, r.remote, "+refs/heads/"+r.branch+":"+r.ref); err != nil {
			return "", err
		}
	}
	return r.repo.RevParse(ctx, r.ref)
}

// fetch brings the candidates' commits into the merge repository.
func (r *mergeRepo) fetch(ctx context.Context, cs []*layout.Candidate) error {
	if r.direct || len(cs) == 0 {
		return nil // workers pushed them here
	}
	var specs []string
	for _, c := range cs {
		specs = append(specs, "+"+c.Branch+":refs/apiary-candidates/"+strings.TrimPrefix(c.Branch, "refs/heads/"))
	}
	return r.repo.Fetch(ctx, r.remote, specs...)
}

// cas moves the integration branch from old to new, or fails with
// git.ErrRefMoved.
func (r *mergeRepo) cas(ctx context.Context, newID, old, reason string) error {
	if r.direct {
		return r.repo.UpdateRef(ctx, r.ref, newID, old, reason)
	}
	ref := "refs/heads/" + r.branch
	if err := r.repo.Push(ctx, r.remote, []string{newID + ":" + ref}, git.PushLease{Ref: ref, Old: old}); err != nil {
		return err
	}
	return r.repo.UpdateRef(ctx, r.ref, newID, "", "apiary: integrated") // best effort: refetched next time
}

// dropBranches deletes integrated candidates' branches from the remote.
func (r *mergeRepo) dropBranches(ctx context.Context, cs []*layout.Candidate) {
	for _, c := range cs {
		if r.direct {
			_ = r.repo.DeleteBranch(ctx, strings.TrimPrefix(c.Branch, "refs/heads/"))
			continue
		}
		_ = r.repo.Push(ctx, r.remote, []string{":" + c.Branch})
	}
}

// accepted is a candidate merged into a batch's tree.
type accepted struct {
	c    *layout.Candidate
	t    board.Task
	p    *layout.Payload
	kind string
	dups []Duplicate
}

// maxBatchRetries bounds recomputations of a batch after the branch moved.
const maxBatchRetries = 10

// integrateBatch merges cs (one worker's, oldest first) onto the head,
// checks the result once and moves the branch by compare-and-swap. A batch
// whose checks fail is retried one candidate at a time, to find the one to
// reject.
func (m *merger) integrateBatch(ctx context.Context, cs []*layout.Candidate, try int) error {
	head, err := m.repo.head(ctx)
	if err != nil {
		return err
	}
	var fetch []*layout.Candidate
	for _, c := range cs {
		if tok, done := m.integrated[c.Task]; !done || tok != c.Token {
			fetch = append(fetch, c) // an integrated one's branch may be gone
		}
	}
	if err := m.repo.fetch(ctx, fetch); err != nil {
		return err
	}
	cur := head
	var acc []accepted
	var checks []string
	timeout := 0.0
	batch := newDupIndex() // the functions acc adds
	for _, c := range cs {
		t, p, ok := m.check(ctx, c)
		if !ok {
			continue
		}
		if tok, done := m.integrated[c.Task]; done && tok == c.Token {
			// On the branch already (a crash came before the board knew).
			m.settleIntegrated(ctx, accepted{c: c, t: t, p: p, kind: "recovered"}, head)
			continue
		}
		dups, added, err := m.duplicates(ctx, c, batch)
		if err != nil {
			return err
		}
		if len(dups) > 0 {
			m.stats.Duplicates++
			m.publishDups(ctx, dups)
			if i := slices.IndexFunc(dups, func(d Duplicate) bool { return m.opts.Policy(d.Kind) == layout.DupReject }); i >= 0 {
				m.stats.DupRejected++
				m.record(outcome{dup: true, passed: false})
				m.rejectDuplicate(ctx, c, t, p, dups[i])
				continue
			}
		}
		target, kind, conflict, err := m.mergeOnto(ctx, c, cur, len(acc) == 0)
		if err != nil {
			return err
		}
		if conflict != nil {
			m.conflict(ctx, c, t, p, cur, conflict)
			continue
		}
		cur = target
		acc = append(acc, accepted{c: c, t: t, p: p, kind: kind, dups: dups})
		for _, fn := range added {
			batch.add(fn, c.Task)
		}
		if p.Envelope != nil {
			for _, ch := range p.Envelope.Completion.Checks {
				if !slices.Contains(checks, ch) {
					checks = append(checks, ch)
				}
			}
			timeout = max(timeout, p.Envelope.Completion.CheckTimeoutS)
		}
	}
	if len(acc) == 0 {
		return m.publishStats(ctx)
	}
	if len(checks) > 0 {
		rep, err := m.runChecks(ctx, head, cur, checks, timeout, try)
		if err != nil {
			return err
		}
		if !rep.Passed() {
			if len(acc) > 1 {
				for _, a := range acc {
					if err := m.integrateBatch(ctx, []*layout.Candidate{a.c}, try); err != nil {
						return err
					}
				}
				return nil
			}
			a := acc[0]
			m.stats.Rejected++
			m.record(outcome{dup: len(a.dups) > 0, passed: false})
			m.reject(ctx, a.c, a.t, a.p, "rejected: "+rep.Failures[0].Error(), true)
			return m.publishStats(ctx)
		}
	}
	err = m.repo.cas(ctx, cur, head, fmt.Sprintf("apiary: integrate %d task(s) of run %s", len(acc), m.env.run.Run))
	if errors.Is(err, git.ErrRefMoved) {
		m.stats.CASRetries++
		if try+1 >= maxBatchRetries {
			return errorf("the integration branch kept moving: %v", err)
		}
		if nh, err := m.repo.head(ctx); err == nil {
			_ = m.scanIntegrated(ctx, nh)
		}
		return m.integrateBatch(ctx, cs, try+1)
	}
	if err != nil {
		return err
	}
	m.stats.Batches++
	for _, a := range acc {
		m.integrated[a.c.Task] = a.c.Token
	}
	// The work is on the branch: the candidates' branches go first, so a
	// finished run leaves none behind.
	m.repo.dropBranches(ctx, candidatesOf(acc))
	// Tasks the batch calls for are added before its tasks are done, so the
	// run cannot end in between.
	m.followUps(ctx, acc)
	m.indexIntegrated(ctx, acc, cur)
	for _, a := range acc {
		m.record(outcome{dup: len(a.dups) > 0, passed: true})
		m.settleIntegrated(ctx, a, cur)
	}
	m.compactIfDue(ctx)
	return m.publishStats(ctx)
}

func candidatesOf(acc []accepted) []*layout.Candidate {
	out := make([]*layout.Candidate, len(acc))
	for i, a := range acc {
		out[i] = a.c
	}
	return out
}

// mergeOnto computes the commit that puts c on cur: c itself when it is
// based on cur and first in its batch (fast-forward), else a merge. It
// returns the conflicting paths instead when c's writes overlap what the
// branch changed since c's base, or do not merge cleanly.
func (m *merger) mergeOnto(ctx context.Context, c *layout.Candidate, cur string, first bool) (target, kind string, conflict *conflictInfo, err error) {
	repo := m.repo.repo
	if cur == c.Base && first {
		return c.Commit, attempt.FastForward, nil, nil
	}
	theirs, err := repo.DiffNameStatus(ctx, c.Base, cur)
	if err != nil {
		return "", "", nil, err
	}
	set := map[string]bool{}
	for _, ch := range theirs {
		set[ch.Path] = true
	}
	var ov []string
	for _, p := range c.Paths {
		if set[p] {
			ov = append(ov, p)
		}
	}
	if len(ov) > 0 {
		return "", "", &conflictInfo{kind: "overlap", paths: ov}, nil
	}
	mr, err := repo.MergeTree(ctx, cur, c.Commit, git.MergeTreeOptions{})
	if err != nil {
		return "", "", nil, err
	}
	if !mr.Clean {
		return "", "", &conflictInfo{kind: "textual", paths: mr.Conflicts}, nil
	}
	msg, err := git.Message(fmt.Sprintf("apiary: integrate %s (merge)", c.Name), "", []git.Trailer{
		{Key: git.TrailerTask, Value: c.Name}, {Key: git.TrailerRun, Value: m.env.run.Run},
		{Key: attempt.TrailerIntegration, Value: attempt.Merge}, {Key: TrailerFence, Value: strconv.FormatInt(c.Token, 10)},
		{Key: TrailerWorker, Value: c.Worker}})
	if err != nil {
		return "", "", nil, err
	}
	sig := git.Signature{Name: "apiary merge role", Email: "apiary@localhost", When: m.env.clock.Now()}
	id, err := repo.CommitTree(ctx, mr.Tree, []string{cur, c.Commit}, msg, sig, sig)
	return id, attempt.Merge, nil, err
}

// runChecks runs the batch's checks on target in a scratch worktree.
func (m *merger) runChecks(ctx context.Context, head, target string, checks []string, timeout float64, try int) (*gate.Report, error) {
	scratch := filepath.Join(m.repo.trees, fmt.Sprintf("check-%d-%d", m.env.clock.Now().UnixNano(), try))
	if err := os.MkdirAll(filepath.Dir(scratch), 0o755); err != nil {
		return nil, err
	}
	if err := m.repo.repo.WorktreeAddDetached(ctx, scratch, target); err != nil {
		return nil, fmt.Errorf("scratch worktree: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = m.repo.repo.WorktreeRemove(cctx, scratch)
	}()
	logDir := filepath.Join(m.cfg.Dir, m.env.run.Run, "checks", filepath.Base(scratch))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	spec := gate.Spec{WriteScope: []string{"."}, Forbidden: []string{}, Checks: checks, CheckTimeout: layout.Secs(timeout),
		LogDir: logDir, Now: m.env.clock.Now}
	// In marked process groups, so what a check leaves (a setsid daemon
	// too) ends with it.
	if tr, err := proc.New(proc.Options{Owner: m.env.run.Run, Env: map[string]string{"APIARY_RUN_ID": m.env.run.Run}, NoCgroup: true}); err == nil {
		ctx = proc.WithTracker(ctx, tr.With("merge/"+filepath.Base(scratch), nil))
	}
	return gate.Run(ctx, spec, gate.Candidate{Repo: m.repo.repo, Base: head, Commit: target, Dir: scratch})
}

// settleIntegrated marks an integrated task done, deletes its candidate,
// logs its intent and writes its receipt.
func (m *merger) settleIntegrated(ctx context.Context, a accepted, commit string) {
	run := m.env.run
	t, p := a.t, a.p
	t.Status = board.TaskDone
	p.Commit, p.Integrated = commit, a.kind
	p.Usage.Add(a.c.Usage)
	logged := loggedIntent{Task: a.c.Task, Files: a.c.Paths, Changes: a.c.Changes}
	stats := m.stats
	stats.Integrated++
	stats.Updated = m.env.clock.Now().UTC()
	// The receipt is on disk before the board says done, so that nobody
	// who sees the task done finds no receipt (a crash in between leaves a
	// receipt for a task the next merge role integrates again, and
	// rewrites).
	m.writeReceipt(a, commit, envelope.StatusSucceeded, "")
	_, err := layout.Settle(ctx, m.env.st, run, t, p, m.guards(a.c), board.DeleteOp(layout.CandKey(run.Run, a.c.Task)),
		board.PutOp(intentLogKey(run.Run, a.c.Task), layout.MustJSON(logged), board.NoLease), board.PutOp(statsKey(run.Run), layout.MustJSON(stats), board.NoLease))
	if err != nil {
		m.env.log.Warn("recording an integrated task", "task", a.c.Task, "err", err)
		_ = os.Remove(m.taskDir(a.c.Name).ReceiptPath())
		return
	}
	delete(m.pending, a.c.Task)
	m.stats = stats
	m.logged++
}

// reject puts c's task back (or fails it) and deletes the candidate.
func (m *merger) reject(ctx context.Context, c *layout.Candidate, t board.Task, p *layout.Payload, reason string, gateFail bool) {
	p.Usage.Add(c.Usage)
	if _, err := layout.Requeue(ctx, m.env.st, m.env.run, t, p, reason, m.guards(c), board.DeleteOp(layout.CandKey(m.env.run.Run, c.Task))); err != nil {
		m.env.log.Warn("rejecting a candidate", "task", c.Task, "err", err)
		return
	}
	delete(m.pending, c.Task)
	m.repo.dropBranches(ctx, []*layout.Candidate{c})
	m.env.log.Info("candidate rejected", "task", c.Task, "reason", reason, "gate", gateFail)
}

// writeReceipt stores an integrated task's receipt with the merge role.
func (m *merger) writeReceipt(a accepted, commit string, status envelope.Status, reason string) {
	kind := a.kind
	rc := &envelope.Receipt{TaskID: a.c.Task, RunID: m.env.run.Run, Name: a.c.Name, Attempt: a.c.Attempt, Status: status,
		Reason: reason, Base: a.c.Base, Commit: commit, ChangedPaths: a.c.Paths, FencingToken: uint64(a.c.Token),
		Integrated: &kind, Usage: a.p.Usage, Summary: envelope.TruncateSummary("integrated by the merge role " + m.env.host + " from worker " + a.c.Worker)}
	m.storeReceipt(a.p, rc, m.taskDir(rc.Name).ReceiptPath())
}

// taskDir is the named task's directory in the merge role's state.
func (m *merger) taskDir(name string) rundir.Task {
	return rundir.TaskIn(filepath.Join(m.cfg.Dir, m.env.run.Run), name)
}

// storeReceipt fills the receipt's defaults and writes it at path, in the
// task's directory of the merge role's state (see taskDir).
func (m *merger) storeReceipt(p *layout.Payload, rc *envelope.Receipt, path string) {
	if p != nil && p.Envelope != nil && p.Envelope.TaskID != "" {
		rc.TaskID = p.Envelope.TaskID
	}
	if rc.ChangedPaths == nil {
		rc.ChangedPaths = []string{}
	}
	if rc.Checks == nil {
		rc.Checks = []envelope.CheckResult{}
	}
	b, err := envelope.EncodeReceipt(rc)
	if err == nil {
		err = rundir.WriteFile(path, append(b, '\n'))
	}
	if err != nil {
		m.env.log.Warn("writing a receipt", "task", rc.Name, "err", err)
	}
}
