package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TestStaleCandidateRefusedByFence forces a stale writer's work to the
// merge role: a worker whose claim on task a ended (and the task was
// claimed again by another, with a newer fencing token) pushes its commit
// and writes its candidate — and its token on the task's record — straight
// to the board, past the claim guard that stops it in a real worker. The
// merge role's board-level fencing check (the claim's fence key, which
// only a claim moves) refuses it: the branch does not move, the candidate
// and its branch on the remote are deleted, the refusal is counted, and
// the current claim keeps its fence.
func TestStaleCandidateRefusedByFence(t *testing.T) {
	t.Parallel()
	f := newSwarmFixture(t)
	ctx := t.Context()
	plan := f.plan[:strings.Index(f.plan, "tasks:")] + "tasks:\n  - {id: a, objective: write a, agent: sh, write_scope: [a.txt]}\n"
	r, err := Publish(ctx, PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan), Options: layout.Options{Shards: 1}})
	if err != nil {
		t.Fatal(err)
	}
	id := layout.TaskID(r.Run, "a")
	// The old claim, then the current one.
	old, err := f.st.Claim(ctx, id, "w-old", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.Release(ctx, old); err != nil {
		t.Fatal(err)
	}
	cur, err := f.st.Claim(ctx, id, "w-new", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Token <= old.Token {
		t.Fatalf("tokens %d then %d", old.Token, cur.Token)
	}
	task, err := f.st.Task(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.DecodePayload(task)
	if err != nil {
		t.Fatal(err)
	}
	// The current claim's holder marks the task running, as a claim does.
	task.Status, task.Worker, task.Token, task.Attempts = board.TaskRunning, "w-new", cur.Token, task.Attempts+1
	val, err := layout.EncodeTask(task, p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.st.Txn(ctx, board.Txn{If: []board.Cmp{cur.Guard()}, Then: []board.Op{board.PutOp(board.TaskKey(id), val, board.NoLease),
		board.PutOp(layout.MarkerKey(r.Run, p.Shard, id), layout.MustJSON(layout.RunMarker{Worker: "w-new", Host: "w-new", Lease: cur.Lease}), board.NoLease)}})
	if err != nil || !res.Succeeded {
		t.Fatalf("marking the task running: %+v %v", res, err)
	}
	// The stale writer even puts its own token back on the task's record:
	// only the claim's fencing key, which no writer can set, tells it apart.
	task.Token, task.Worker = old.Token, "w-old"
	if val, err = layout.EncodeTask(task, p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Txn(ctx, board.Txn{Then: []board.Op{board.PutOp(board.TaskKey(id), val, board.NoLease)}}); err != nil {
		t.Fatal(err)
	}
	// The stale writer's commit and branch on the remote (this repository).
	dir := f.repo.Dir()
	wt := filepath.Join(t.TempDir(), "stale")
	gittest.Git(t, dir, "worktree", "add", "--quiet", "--detach", wt, r.StartHead)
	gittest.WriteFiles(t, wt, map[string]string{"a.txt": "stale\n"})
	gittest.Git(t, wt, "add", "a.txt")
	gittest.Git(t, wt, "commit", "--quiet", "-m", "a: stale work")
	commit := gittest.Git(t, wt, "rev-parse", "HEAD")
	branch := candidateRef(r.Run, "a", old.Token)
	gittest.Git(t, dir, "update-ref", branch, commit)
	c := layout.Candidate{Task: id, Name: "a", Worker: "w-old", Token: old.Token, Attempt: 1, Base: r.StartHead, Commit: commit,
		Branch: branch, Paths: []string{"a.txt"}, Added: 1, Time: time.Now().UTC().Add(-time.Hour)}
	if _, err := f.st.Txn(ctx, board.Txn{Then: []board.Op{board.PutOp(layout.CandKey(r.Run, id), layout.MustJSON(c), board.NoLease)}}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.CheckFence(ctx, id, old.Token); !errors.Is(err, board.ErrStaleFence) {
		t.Fatalf("the old token is not stale: %v", err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); f.wg.Wait() }()
	f.host(t, hctx, HostConfig{Host: "m", Run: r.Run, TTL: 3 * time.Second,
		Merge: &MergeConfig{Dir: filepath.Join(f.work, "merge"), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}})
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := f.st.Get(ctx, layout.CandKey(r.Run, id)); errors.Is(err, board.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the merge role never settled the stale candidate")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if head := gittest.Git(t, dir, "rev-parse", "main"); head != r.StartHead {
		t.Errorf("the integration branch moved to %s", head)
	}
	// The merge role deletes the candidate's record, then its branch.
	for {
		ok, _ := f.repo.BranchExists(ctx, strings.TrimPrefix(branch, "refs/heads/"))
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stale candidate's branch %s is still on the remote", branch)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The refusal is counted in the stats the merge role publishes next.
	var stats MergeStats
	for {
		if kv, err := f.st.Get(ctx, statsKey(r.Run)); err == nil && json.Unmarshal(kv.Value, &stats) == nil && stats.Stale > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refusal was never counted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if stats.Stale != 1 || stats.Integrated != 0 {
		t.Errorf("merge stats %+v; want one stale refusal and nothing integrated", stats)
	}
	now, err := f.st.Task(ctx, id)
	if err != nil || now.Status != board.TaskRunning {
		t.Errorf("the task after the refusal: %+v %v; want it still running", now, err)
	}
	if err := f.st.CheckFence(ctx, id, cur.Token); err != nil {
		t.Errorf("the current claim lost its fence: %v", err)
	}
}
