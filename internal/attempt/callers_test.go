package attempt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// ledger is a ModelAccess that grants one key per attempt, reports a
// distinct usage for each and records every grant and revocation.
type ledger struct {
	mu      sync.Mutex
	grants  []attempt.TaskRef
	revoked map[string]time.Time
}

func (l *ledger) Grant(_ context.Context, ref attempt.TaskRef, _ envelope.Budget) (attempt.Access, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.grants = append(l.grants, ref)
	id := fmt.Sprintf("k%d", len(l.grants))
	return attempt.Access{BaseURL: "http://127.0.0.1:9", APIKey: "key-" + id, KeyID: id}, nil
}

// Usage is 1000·n input and n output tokens and n cents for key kN.
func (l *ledger) Usage(_ context.Context, keyID string) (attempt.Usage, error) {
	var n int64
	fmt.Sscanf(keyID, "k%d", &n)
	return attempt.Usage{Known: true, InputTokens: 1000 * n, OutputTokens: n, USD: float64(n) / 100}, nil
}

func (l *ledger) Revoke(_ context.Context, keyID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.revoked == nil {
		l.revoked = map[string]time.Time{}
	}
	l.revoked[keyID] = time.Now()
	return nil
}

func (l *ledger) only(t *testing.T, role string) (attempt.TaskRef, string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var refs []attempt.TaskRef
	var key string
	for i, g := range l.grants {
		if g.Role == role {
			refs, key = append(refs, g), fmt.Sprintf("k%d", i+1)
		}
	}
	if len(refs) != 1 {
		t.Fatalf("%d %s grants: %+v", len(refs), role, l.grants)
	}
	if _, ok := l.revoked[key]; !ok {
		t.Errorf("the %s's key %s was never revoked", role, key)
	}
	return refs[0], key
}

// callerAgent does each role's part, and records what every attempt is
// given: its ids, its envelope (which must be in its own worktree), its
// key, its working directory.
const callerAgent = `set -e
{
  echo "role=$APIARY_ROLE"
  echo "task_id=$APIARY_TASK_ID"
  echo "run_id=$APIARY_RUN_ID"
  echo "key=$ANTHROPIC_API_KEY"
  echo "pwd=$(pwd -P)"
  echo "envelope=$(cd "$(dirname "$APIARY_ENVELOPE")/.." && pwd -P)"
} > "$RECORD/$APIARY_ROLE.env"
test -s "$APIARY_ENVELOPE"
case "$APIARY_ROLE" in
worker) echo done > out.txt ;;
planner) printf 'version: 1\ntasks:\n  - {id: one, objective: write out, agent: %s, write_scope: [out.txt]}\n' "$APIARY_WORKER" > "$APIARY_PLAN" ;;
analyser) printf '{"findings": []}' > "$APIARY_FINDINGS" ;;
esac
`

// recorded reads what the agent of role recorded.
func recorded(t *testing.T, dir, role string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, role+".env"))
	if err != nil {
		t.Fatalf("the %s's agent left no record: %v", role, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

// TestEveryCallerRunsAttemptRun runs one attempt through each of the four
// callers of attempt.Run — the runtime's worker, the planner, a swarm
// worker and a review analyser — and checks that each did the same
// things: granted one key for an attempt named by its caller's record,
// gave the agent its envelope inside its own worktree, revoked the key,
// removed the worktree, and recorded the model service's usage for it.
func TestEveryCallerRunsAttemptRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	gittest.WriteFiles(t, dir, map[string]string{"agent.sh": callerAgent})
	record := filepath.Join(dir, "record")
	if err := os.MkdirAll(record, 0o755); err != nil {
		t.Fatal(err)
	}
	agents := map[string]plan.Agent{"sh": {Kind: "command", Argv: []string{"sh", script}, Env: map[string]string{"RECORD": record}}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	wantUsage := func(t *testing.T, who string, key string, got envelope.Usage) {
		t.Helper()
		var n int64
		fmt.Sscanf(key, "k%d", &n)
		if got.InputTokens != 1000*n || got.OutputTokens != n || got.USD != float64(n)/100 {
			t.Errorf("%s recorded usage %+v, want the model service's for %s", who, got, key)
		}
	}
	sameWorktree := func(t *testing.T, role string) {
		t.Helper()
		r := recorded(t, record, role)
		if r["pwd"] == "" || r["pwd"] != r["envelope"] {
			t.Errorf("%s: the envelope is not in the agent's worktree: %v", role, r)
		}
		if _, err := os.Stat(r["pwd"]); err == nil {
			t.Errorf("%s: the worktree %s was left behind", role, r["pwd"])
		}
	}

	t.Run("runtime worker and planner", func(t *testing.T) {
		l := &ledger{}
		repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
		rep, err := runs.Start(ctx, runs.Config{Repo: repo, Models: l}, runs.NewRun{Goal: "write out", Planner: "sh", Worker: "sh", Agents: agents})
		if err != nil || !rep.OK() {
			t.Fatalf("run: %v, %+v", err, rep)
		}
		ref, key := l.only(t, attempt.RoleWorker)
		tr := rep.Task("one")
		if ref.Run != rep.RunID || ref.Task != "one" || ref.Attempt != 1 || ref.Capability == "" {
			t.Errorf("worker grant %+v", ref)
		}
		if r := recorded(t, record, attempt.RoleWorker); r["run_id"] != rep.RunID || r["key"] != "key-"+key || r["task_id"] != ref.TaskID {
			t.Errorf("worker record %v, grant %+v", r, ref)
		}
		wantUsage(t, "the runtime's receipt", key, envelope.Usage{InputTokens: tr.Usage.InputTokens, OutputTokens: tr.Usage.OutputTokens, USD: tr.Usage.USD})
		sameWorktree(t, attempt.RoleWorker)

		pref, pkey := l.only(t, attempt.RolePlanner)
		if pref.Run != rep.RunID || pref.Attempt != 1 || rep.Planner == nil {
			t.Errorf("planner grant %+v, report %+v", pref, rep.Planner)
		} else {
			wantUsage(t, "the planner's receipt", pkey, envelope.Usage{InputTokens: rep.Planner.Usage.InputTokens, OutputTokens: rep.Planner.Usage.OutputTokens, USD: rep.Planner.Usage.USD})
		}
		if r := recorded(t, record, attempt.RolePlanner); r["task_id"] != pref.TaskID {
			t.Errorf("planner record %v, grant %+v", r, pref)
		}
		sameWorktree(t, attempt.RolePlanner)
	})

	t.Run("swarm worker", func(t *testing.T) {
		l := &ledger{}
		repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
		st, err := connect.Open(ctx, "local:"+filepath.Join(t.TempDir(), "state.db"), connect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		hctx, stop := context.WithCancel(ctx)
		defer stop()
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() {
			exec := &swarm.GitExecutor{Dir: t.TempDir(), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}, Models: l}
			_ = swarm.RunHost(hctx, swarm.HostConfig{Store: st, Host: "h", Workers: []swarm.WorkerSpec{{ID: "w", Profile: "sh", Slots: 1}}, Exec: exec})
		})
		planData := []byte("version: 1\ntasks:\n  - {id: one, objective: write out, agent: sh, write_scope: [out.txt]}\n")
		r, rep, err := swarm.Run(ctx, swarm.RunConfig{PublishConfig: swarm.PublishConfig{Store: st, Repo: repo, PlanFile: "plan.yaml",
			PlanData: planData, Agents: agents}})
		stop()
		if err != nil || !rep.OK() {
			t.Fatalf("swarm run: %v, %+v", err, rep)
		}
		ref, key := l.only(t, attempt.RoleWorker)
		if ref.Run != r.Run || ref.Task != "one" || ref.Attempt != 1 {
			t.Errorf("swarm grant %+v", ref)
		}
		if rec := recorded(t, record, attempt.RoleWorker); rec["run_id"] != r.Run || rec["key"] != "key-"+key || rec["task_id"] != ref.TaskID {
			t.Errorf("swarm worker record %v, grant %+v", rec, ref)
		}
		wantUsage(t, "the swarm report", key, rep.Task("one").Usage)
		sameWorktree(t, attempt.RoleWorker)
	})

	t.Run("review analyser", func(t *testing.T) {
		l := &ledger{}
		repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
		gittest.Git(t, repo.Dir(), "checkout", "--quiet", "-b", "feature")
		gittest.Commit(t, repo, map[string]string{"a.txt": "b\n"}, nil)
		cfg, err := review.ParseConfig("review.yaml", []byte("agents:\n  sh: {kind: command, argv: [sh, "+script+"], env: {RECORD: "+record+"}}\nanalysers:\n  - {name: look, agent: sh}\n"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := review.Run(ctx, review.Options{Repo: repo, Models: l}, review.Request{Base: "main", Head: "feature", Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		ref, key := l.only(t, attempt.RoleAnalyser)
		var run *review.AnalyserRun
		for i := range rep.Analysers {
			if rep.Analysers[i].Name == "look" {
				run = &rep.Analysers[i]
			}
		}
		if run == nil || run.Status != "ok" || run.Usage == nil {
			t.Fatalf("analyser run %+v", run)
		}
		if ref.Run != rep.ReviewID || ref.Task != "look" || ref.TaskID != run.TaskID {
			t.Errorf("review grant %+v, analyser %+v", ref, run)
		}
		wantUsage(t, "the review report", key, *run.Usage)
		sameWorktree(t, attempt.RoleAnalyser)
	})
}
