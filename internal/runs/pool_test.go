package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// poolRepoFiles is the repository the pool tests run in: enough
// directories that a sparse cone leaves some out, and ignored files.
func poolRepoFiles() map[string]string {
	files := map[string]string{".gitignore": "*.tmp\n", "README": "pool\n", "out/log.txt": "start\n"}
	for d := range 4 {
		for f := range 5 {
			files[fmt.Sprintf("pkg%d/f%d.txt", d, f)] = fmt.Sprintf("%d/%d\n", d, f)
		}
	}
	return files
}

// poolAgent fails unless its worktree is what a fresh checkout of its base
// would be (no ignored file, no directory an earlier attempt left, the
// tracked files of the base), then changes a tracked file, adds one and
// leaves an ignored file and an empty directory behind.
const poolAgent = `set -e
test ! -e junk.tmp
test ! -e scratch
test "$(cat pkg1/f1.txt)" = 1/1
test "$(git rev-parse HEAD)" = "$APIARY_BASE"
echo "$APIARY_TASK" >> out/log.txt
echo "$APIARY_TASK" > "out/$APIARY_TASK.txt"
echo junk > junk.tmp
mkdir scratch
echo $(ls -d pkg*) > "$SEEN/$APIARY_TASK"
`

// gitLogger returns a git executable that logs every command line to a
// file before running git, and the file.
func gitLogger(t *testing.T) (bin, log string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "git"), filepath.Join(dir, "git.log")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %q\nexec %q \"$@\"\n", log, real)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// worktreeAdds counts the `git worktree add` commands in a gitLogger log.
func worktreeAdds(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " worktree add ")
}

// assertNothingLeft fails if the run left a worktree, git's record of
// one, or its directory of worktrees.
func assertNothingLeft(t *testing.T, repo *git.Repo, id string) {
	t.Helper()
	out := gittest.Git(t, repo.Dir(), "worktree", "list", "--porcelain")
	if n := strings.Count(out, "worktree "); n != 1 || strings.Contains(out, "prunable") {
		t.Errorf("worktrees left:\n%s", out)
	}
	if _, err := os.Lstat(rundir.State(repo.Dir(), "worktrees", id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the run's directory of worktrees is still there: %v", err)
	}
	if ents, err := os.ReadDir(filepath.Join(gittest.Git(t, repo.Dir(), "rev-parse", "--absolute-git-dir"), "worktrees")); err == nil && len(ents) > 0 {
		t.Errorf("git keeps %d worktree records", len(ents))
	}
}

// TestRunPoolReusesWorktrees runs five tasks in sequence, each with a
// check, with the worktree pool and without it, in two copies of one
// repository: with it the run adds one worktree (the pool's first) where
// without it it adds one per attempt and per check, every agent finds a
// worktree like a fresh checkout of its base (the agent fails otherwise),
// and both runs end with the same tree and the same receipts, leaving
// nothing behind.
func TestRunPoolReusesWorktrees(t *testing.T) {
	t.Parallel()
	const n = 5
	plan := func(seen string) string {
		var plan strings.Builder
		fmt.Fprintf(&plan, "version: 1\nmax_parallel: 1\nagents:\n  sh: {kind: command, env: {SEEN: %q}, argv: [sh, -c, %q]}\ntasks:\n", seen, poolAgent)
		for i := 1; i <= n; i++ {
			deps := ""
			if i > 1 {
				deps = fmt.Sprintf(", deps: [t%d]", i-1)
			}
			fmt.Fprintf(&plan, "  - {id: t%d, objective: step %d, agent: sh, write_scope: [out/], inputs: [pkg1/f1.txt]%s, checks: [\"test -f out/t%d.txt && test ! -e junk.tmp\"]}\n", i, i, deps, i)
		}
		return plan.String()
	}
	type result struct {
		tree  string
		adds  int
		rep   *Report
		repo  *git.Repo
		stats []envelope.Status
		seen  string // the directories each agent saw
	}
	runOnce := func(pool PoolConfig) result {
		base := gittest.NewRepo(t, poolRepoFiles())
		bin, log := gitLogger(t)
		repo := git.New(base.Dir(), git.Options{Git: bin, Env: append(os.Environ(), gittest.Env...)})
		seen := t.TempDir()
		rep := start(t, repo, plan(seen), Config{WorktreePool: pool})
		if !rep.OK() {
			for _, tr := range rep.Tasks {
				t.Logf("%s: %s %s", tr.ID, tr.Status, tr.Reason)
			}
			t.Fatalf("run (pool %+v) %s", pool, rep.Status)
		}
		res := result{tree: gittest.Git(t, repo.Dir(), "rev-parse", "main^{tree}"), adds: worktreeAdds(t, log), rep: rep, repo: repo}
		for i := 1; i <= n; i++ {
			res.stats = append(res.stats, receipt(t, repo, rep.RunID, fmt.Sprintf("t%d", i)).Status)
			b, err := os.ReadFile(filepath.Join(seen, fmt.Sprintf("t%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			res.seen += string(b)
		}
		assertNothingLeft(t, repo, rep.RunID)
		return res
	}
	pooled := runOnce(PoolConfig{})
	sparse := runOnce(PoolConfig{Sparse: true})
	fresh := runOnce(PoolConfig{Off: true})
	if fresh.adds != 2*n {
		t.Errorf("without the pool the run added %d worktrees, want %d (an attempt and a check per task)", fresh.adds, 2*n)
	}
	for _, r := range []struct {
		name string
		res  result
	}{{"pooled", pooled}, {"sparse", sparse}} {
		if r.res.adds != 1 {
			t.Errorf("%s: the run added %d worktrees for %d attempts and %d checks, want 1", r.name, r.res.adds, n, n)
		}
		if r.res.tree != fresh.tree {
			t.Errorf("%s: the run's tree %s, without the pool %s", r.name, r.res.tree, fresh.tree)
		}
		if fmt.Sprint(r.res.stats) != fmt.Sprint(fresh.stats) {
			t.Errorf("%s: receipts %v, without the pool %v", r.name, r.res.stats, fresh.stats)
		}
	}
	if want := strings.Repeat("pkg0 pkg1 pkg2 pkg3\n", n); pooled.seen != want || fresh.seen != want {
		t.Errorf("agents of the whole tree saw %q (pooled) and %q (fresh), want %q", pooled.seen, fresh.seen, want)
	}
	if want := strings.Repeat("pkg1\n", n); sparse.seen != want {
		t.Errorf("agents of the sparse cone [pkg1 out] saw %q, want %q", sparse.seen, want)
	}
	want := "start\nt1\nt2\nt3\nt4\nt5\n"
	if got := gittest.Show(t, pooled.repo, "main", "out/log.txt"); got != want {
		t.Errorf("out/log.txt = %q, want %q", got, want)
	}
}

// TestSparseCone: the cone comes from the envelope's inputs and write
// scope, and is the whole tree whenever what the task reads is unknown.
func TestSparseCone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		inputs, scope []string
		want          string
	}{
		{nil, []string{"out/"}, "[]"},
		{[]string{"pkg1/f1.txt"}, []string{"out/"}, "[pkg1 out]"},
		{[]string{"docs"}, []string{"a/b/c.go", "x/"}, "[docs a/b x]"},
		{[]string{"pkg1/"}, []string{"."}, "[]"},
		{[]string{"src/*.go"}, []string{"src/"}, "[]"},
	} {
		e := &envelope.Envelope{Inputs: envelope.Inputs{Paths: c.inputs}, Authority: envelope.Authority{WriteScope: c.scope}}
		if got := fmt.Sprint(attempt.SparseCone(e)); got != c.want {
			t.Errorf("inputs %v, scope %v: cone %s, want %s", c.inputs, c.scope, got, c.want)
		}
	}
}

// TestRunPoolKilled kills (SIGKILL) a run's process while one attempt
// holds a pooled worktree and the pool has another idle; then, in one case
// a reap and in the other a resume, removes everything: no worktree, no
// record of one in git, no directory.
func TestRunPoolKilled(t *testing.T) {
	t.Parallel()
	for _, after := range []string{"reap", "resume"} {
		t.Run(after, func(t *testing.T) {
			t.Parallel()
			repo := gittest.NewRepo(t, poolRepoFiles())
			flags := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestRunPoolHelper$")
			cmd.Env = append(os.Environ(), gittest.Env...)
			cmd.Env = append(cmd.Env, "APIARY_RUN_POOL_HELPER="+repo.Dir()+"\n"+flags)
			logPath := filepath.Join(t.TempDir(), "helper.log")
			logf, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			cmd.Stdout, cmd.Stderr = logf, logf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var id string
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				if id != "" {
					_ = os.WriteFile(filepath.Join(flags, "release"), nil, 0o644)
					_, _ = Reap(context.Background(), repo, ReapOptions{Now: func() time.Time { return time.Now().Add(time.Hour) }})
				}
			})
			deadline := time.Now().Add(2 * time.Minute)
			for {
				ids, _ := rundir.List(repo.Dir())
				if _, err := os.Stat(filepath.Join(flags, "started-b")); err == nil && len(ids) == 1 {
					id = ids[0]
					break
				}
				if time.Now().After(deadline) {
					b, _ := os.ReadFile(logPath)
					t.Fatalf("the run did not get to task b:\n%s", b)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			// What the kill left: b's worktree at its own path, and the
			// pool's idle one in the pool's directory.
			list := gittest.Git(t, repo.Dir(), "worktree", "list", "--porcelain")
			if !strings.Contains(list, rundir.WorktreePath(repo.Dir(), id, "b", 1, "")+"\n") || !strings.Contains(list, poolDir(repo.Dir(), id)+"/") {
				t.Fatalf("after the kill, want b's worktree and an idle pooled one:\n%s", list)
			}
			switch after {
			case "reap":
				rr, err := Reap(t.Context(), repo, ReapOptions{Now: func() time.Time { return time.Now().Add(time.Hour) }})
				if err != nil {
					t.Fatalf("reap: %v (%+v)", err, rr)
				}
			case "resume":
				if err := os.WriteFile(filepath.Join(flags, "release"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				rep, err := Resume(boundedCtx(t), Config{Repo: repo}, id)
				if err != nil || !rep.OK() {
					t.Fatalf("resume: %v %+v", err, rep)
				}
				if got := gittest.Show(t, repo, "main", "out/log.txt"); got != "start\nb\n" {
					t.Errorf("out/log.txt after the resume = %q", got)
				}
			}
			assertNothingLeft(t, repo, id)
		})
	}
}

// poolKilledPlan: a and c run at once (each waits for the other to have
// started), so the pool makes two worktrees; b, after both, waits for a
// release file, holding one while the other is idle.
const poolKilledPlan = `version: 1
max_parallel: 2
agents:
  pair: {kind: command, env: {FLAGS: "%[1]s"}, argv: [sh, -c, 'o=a; [ "$APIARY_TASK" = a ] && o=c; touch "$FLAGS/started-$APIARY_TASK"; while [ ! -e "$FLAGS/started-$o" ]; do sleep 0.02; done; echo "$APIARY_TASK" > "out/$APIARY_TASK.txt"']}
  hold: {kind: command, env: {FLAGS: "%[1]s"}, argv: [sh, -c, 'touch "$FLAGS/started-b"; while [ ! -e "$FLAGS/release" ]; do sleep 0.02; done; echo b >> out/log.txt']}
tasks:
  - {id: a, objective: a, agent: pair, write_scope: [out/]}
  - {id: c, objective: c, agent: pair, write_scope: [out/]}
  - {id: b, objective: b, agent: hold, write_scope: [out/], deps: [a, c]}
`

// TestRunPoolHelper is the run TestRunPoolKilled kills.
func TestRunPoolHelper(t *testing.T) {
	spec := os.Getenv("APIARY_RUN_POOL_HELPER")
	if spec == "" {
		t.Skip("run by TestRunPoolKilled")
	}
	dir, flags, _ := strings.Cut(spec, "\n")
	repo := git.New(dir, git.Options{Env: append(os.Environ(), gittest.Env...)})
	rep, err := Start(context.Background(), Config{Repo: repo}, NewRun{PlanFile: "plan.yaml", PlanData: []byte(fmt.Sprintf(poolKilledPlan, flags))})
	t.Fatalf("the run ended before it was killed: %v %+v", err, rep)
}
