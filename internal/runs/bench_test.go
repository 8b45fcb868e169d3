package runs

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// BenchmarkDispatch measures the runtime's overhead per task: worktree,
// envelope, agent process (one that exits at once), commit attempt, cleanup
// and receipt, for a plan of 8 independent tasks on 4 workers.
func BenchmarkDispatch(b *testing.B) {
	repo := gittest.NewRepo(b, map[string]string{"README": "x\n"})
	var src strings.Builder
	src.WriteString("version: 1\nmax_parallel: 4\nagents:\n  nop: {kind: command, argv: [\"true\"]}\ntasks:\n")
	const tasks = 8
	for i := range tasks {
		fmt.Fprintf(&src, "  - {id: t%d, objective: x, agent: nop, write_scope: [t%d/]}\n", i, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Start(boundedCtx(b), Config{Repo: repo}, NewRun{PlanFile: "plan.yaml", PlanData: []byte(src.String())})
		if err != nil || !rep.OK() {
			b.Fatalf("run: %v %+v", err, rep)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*tasks), "ms/task")
}

// BenchmarkIntegrateMerge measures the integrator's work per three-way
// merge, without checks: overlap test, merge-tree, commit-tree and the CAS.
// Every candidate adds one file on the original base, so each one merges.
func BenchmarkIntegrateMerge(b *testing.B) {
	repo := gittest.NewRepo(b, map[string]string{"README": "x\n"})
	ctx := b.Context()
	s, err := Config{Repo: repo}.resolve()
	if err != nil {
		b.Fatal(err)
	}
	r := &runner{s: s, st: rundir.NewLog(repo.Dir(), "bench", s.now, nil), repo: repo, ref: "refs/heads/main", wt: rundir.NewWorktreeLock(repo.Dir())}
	defer r.st.Close()
	r.leases = supervise.NewLeases(s.now, 0)
	base := gittest.Git(b, repo.Dir(), "rev-parse", "main")
	baseTree := gittest.Git(b, repo.Dir(), "rev-parse", "main^{tree}")
	a := &attemptState{run: "bench", task: "t", n: 1, tmpl: &envelope.Envelope{Objective: "x"}, profileName: "nop",
		trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		name := fmt.Sprintf("f%06d.txt", i)
		cand := candidateAdding(b, repo, base, baseTree, name)
		ls, err := r.leases.Grant("t", "bench", time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		a.fence = ls.Fence
		b.StartTimer()
		res := r.integrate(ctx, &integRequest{a: a, base: base, candidate: cand, changes: []git.Change{{Status: 'A', Path: name}}})
		b.StopTimer()
		r.leases.Release("t", ls.Fence)
		b.StartTimer()
		if res.outcome != outIntegrated || (i > 1 && res.kind != attempt.Merge) {
			b.Fatalf("outcome %d kind %s: %v", res.outcome, res.kind, res.err)
		}
	}
}

// candidateAdding makes a commit on base that adds one file, with plumbing.
func candidateAdding(b *testing.B, repo *git.Repo, base, baseTree, name string) string {
	blob := gitIn(b, repo.Dir(), name+"\n", "hash-object", "-w", "--stdin")
	listing := gittest.Git(b, repo.Dir(), "ls-tree", baseTree)
	tree := gitIn(b, repo.Dir(), listing+"\n100644 blob "+blob+"\t"+name+"\n", "mktree")
	return gittest.Git(b, repo.Dir(), "commit-tree", tree, "-p", base, "-m", "add "+name)
}

func gitIn(b *testing.B, dir, stdin string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), gittest.Env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
