package swarm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/swarm/layout"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// swarmAgent is the command agent of the swarm tests: it writes files by
// task, and e and f wait for each other (up to ~30 s, for loaded machines)
// so their writes to shared.txt really conflict.
const swarmAgent = `set -e
case "$APIARY_TASK" in
a) echo a > a.txt ;;
b) echo b > b.txt ;;
c) mkdir -p util; printf 'package util\n\n// Sum adds.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n' > util/c.go ;;
d) mkdir -p util; printf 'package util\n\nfunc SumAll(xs []int) int {\n\t// the same body, other comments\n\ttotal := 0\n\tfor _, x := range xs { total += x }\n\treturn total\n}\n' > util/d.go ;;
e|f)
  touch "$FLAGS/started-$APIARY_TASK-$APIARY_ATTEMPT"
  if [ "$APIARY_ATTEMPT" = 1 ]; then
    i=0; while [ ! -e "$FLAGS/started-e-1" ] || [ ! -e "$FLAGS/started-f-1" ]; do i=$((i+1)); [ $i -gt 1500 ] && break; sleep 0.02; done
  fi
  echo "$APIARY_TASK" >> shared.txt ;;
g) cp .apiary/envelope.json g-envelope.json ;;
esac
`

// swarmPlan has a dependency chain, a duplicate function, two tasks that
// write one file at once, and a task that records its envelope.
const swarmPlan = `version: 1
agents:
  sh: {kind: command, argv: [sh, "AGENT"], env: {FLAGS: "FLAGDIR"}, model: sh-model}
tasks:
  - {id: a, objective: write a, agent: sh, write_scope: [a.txt], tags: [txt]}
  - {id: b, objective: write b, agent: sh, write_scope: [b.txt], deps: [a], tags: [txt]}
  - {id: c, objective: add Sum, agent: sh, write_scope: [util/c.go], tags: [go]}
  - {id: d, objective: add SumAll, agent: sh, write_scope: [util/d.go], tags: [go], deps: [c]}
  - {id: e, objective: append e, agent: sh, write_scope: [shared.txt], tags: [txt]}
  - {id: f, objective: append f, agent: sh, write_scope: [shared.txt], tags: [txt]}
  - {id: g, objective: record the envelope, agent: sh, write_scope: [g-envelope.json], deps: [e, f, b, d]}
`

type swarmFixture struct {
	repo  *git.Repo
	st    *board.Store
	dsn   string
	flags string
	plan  string
	work  string
	wg    sync.WaitGroup
	// models, when set, is the workers' model access.
	models attempt.ModelAccess
	mu     sync.Mutex
	execs  map[string]*GitExecutor // host -> its executor
}

func newSwarmFixture(t *testing.T) *swarmFixture {
	t.Helper()
	f := &swarmFixture{repo: gittest.NewRepo(t, map[string]string{"README.md": "swarm\n", "shared.txt": "start\n"})}
	dir := t.TempDir()
	f.flags, f.work = filepath.Join(dir, "flags"), filepath.Join(dir, "work")
	if err := os.MkdirAll(f.flags, 0o755); err != nil {
		t.Fatal(err)
	}
	agentPath := filepath.Join(dir, "agent.sh")
	gittest.WriteFiles(t, dir, map[string]string{"agent.sh": swarmAgent})
	f.plan = strings.NewReplacer("AGENT", agentPath, "FLAGDIR", f.flags).Replace(swarmPlan)
	f.dsn = "local:" + filepath.Join(dir, "state.db")
	st, err := connect.Open(t.Context(), f.dsn, connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	return f
}

// host starts a host on its own board client, as a separate process would.
func (f *swarmFixture) host(t testing.TB, ctx context.Context, cfg HostConfig) {
	t.Helper()
	st, err := connect.Open(t.Context(), f.dsn, connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Store = st
	if len(cfg.Workers) > 0 {
		x := &GitExecutor{Dir: filepath.Join(f.work, cfg.Host), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}, Store: st, Models: f.models}
		cfg.Exec = x
		f.mu.Lock()
		if f.execs == nil {
			f.execs = map[string]*GitExecutor{}
		}
		f.execs[cfg.Host] = x
		f.mu.Unlock()
	}
	f.wg.Go(func() {
		if err := RunHost(ctx, cfg); err != nil && ctx.Err() == nil {
			t.Errorf("host %s: %v", cfg.Host, err)
		}
	})
}

// TestSwarmGit runs a plan in swarm mode on the local board with three
// workers on two hosts and a separate merge role, with real git and
// command agents: every task is integrated exactly once; the simultaneous
// writes to one file make a conflict record whose hint awaits review and a
// second attempt; the duplicate function is reported; the intents of the
// colliding tasks overlap; the hot file and the utility index are
// published; every attempt's spend names its profile and model; receipts
// are on disk and no worktree is left.
func TestSwarmGit(t *testing.T) {
	t.Parallel()
	f := newSwarmFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	opts := layout.Options{Shards: 2, IntentWaitS: 0.5, OfferAfterS: 5, OpenAfterS: 2, Merge: layout.MergeOptions{HotTouches: 2}}
	r, err := Publish(ctx, PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(f.plan), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); f.wg.Wait() }()
	mergeDir := filepath.Join(f.work, "merge")
	// Host leases long enough that a loaded machine does not lapse one:
	// an attempt put back for it would be one attempt too many below.
	f.host(t, hctx, HostConfig{Host: "h1", Run: r.Run, TTL: 10 * time.Second, Workers: []WorkerSpec{
		{ID: "w1", Skills: []string{"go"}, Profile: "sh"}, {ID: "w2", Skills: []string{"txt"}, Profile: "sh"}}})
	f.host(t, hctx, HostConfig{Host: "h2", Run: r.Run, TTL: 10 * time.Second, Workers: []WorkerSpec{
		{ID: "w3", Skills: []string{"txt", "go"}, Profile: "sh", Slots: 2}}})
	f.host(t, hctx, HostConfig{Host: "m", Run: r.Run, TTL: 10 * time.Second, Merge: &MergeConfig{Dir: mergeDir, Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}})
	rep, err := WaitRun(ctx, f.st, r.Run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("run did not succeed:\n%s", b.String())
	}
	// Exactly once on the branch, by trailers.
	head, err := f.repo.RevParse(ctx, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	log, err := f.repo.FirstParentLog(ctx, r.StartHead, head)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range log {
		name, _ := git.TrailerValue(e.Trailers, git.TrailerTask)
		seen[name]++
		if _, ok := git.TrailerValue(e.Trailers, TrailerFence); !ok {
			t.Errorf("commit %s for %s has no fencing token trailer", e.ID, name)
		}
	}
	for _, name := range r.Tasks {
		if seen[name] != 1 {
			t.Errorf("task %s integrated %d times (%v)", name, seen[name], seen)
		}
		if _, err := os.Stat(filepath.Join(mergeDir, r.Run, "tasks", name, "receipt.json")); err != nil {
			t.Errorf("no receipt for %s: %v", name, err)
		}
	}
	if got := gittest.Show(t, f.repo, head, "shared.txt"); got != "start\ne\nf\n" && got != "start\nf\ne\n" {
		t.Errorf("shared.txt = %q: both appends must survive, once each", got)
	}
	// The conflict: one of e and f was redone, and its type awaits review.
	if rep.Task("e").Attempts+rep.Task("f").Attempts != 3 {
		t.Errorf("attempts e=%d f=%d; want one of them redone once (e: %+v, f: %+v)", rep.Task("e").Attempts, rep.Task("f").Attempts, rep.Task("e"), rep.Task("f"))
	}
	// Every attempt's spend is recorded, naming the profile its worker ran
	// it with and the model that (command) profile names.
	for _, tr := range rep.Tasks {
		if len(tr.Spent) != tr.Attempts {
			t.Errorf("task %s: %d attempts, %d recorded: %+v", tr.ID, tr.Attempts, len(tr.Spent), tr.Spent)
		}
		for _, s := range tr.Spent {
			if s.Profile != "sh" || s.Model != "sh-model" || s.Worker == "" {
				t.Errorf("task %s: attempt %+v; want it run by a worker with sh (sh-model)", tr.ID, s)
			}
		}
	}
	if len(rep.Conflicts) != 1 || !strings.Contains(rep.Conflicts[0].Type, "overlap:") || len(rep.Hints) != 1 || rep.Hints[0].State != board.HintPending {
		t.Errorf("conflicts %+v, hints %+v; want one overlap conflict with a pending hint", rep.Conflicts, rep.Hints)
	}
	// The duplicate function.
	if len(rep.Duplicates) != 1 || rep.Duplicates[0].Kind != layout.DupExact || rep.Duplicates[0].Func.Name != "SumAll" || rep.Duplicates[0].Of.Name != "Sum" {
		t.Errorf("duplicates %+v; want SumAll as an exact duplicate of Sum", rep.Duplicates)
	}
	// g's envelope: references only, no hint (none approved).
	var env envelope.Envelope
	if err := json.Unmarshal([]byte(gittest.Show(t, f.repo, head, "g-envelope.json")), &env); err != nil {
		t.Fatal(err)
	}
	if env.Name != "g" || !strings.HasPrefix(env.Inputs.Workspace, "git:") || len(env.Hints) != 0 {
		t.Errorf("g's envelope %+v", env)
	}
	// shared.txt, written by e and f, is hot at two touches here: its
	// split task was added to the run and ran; the utility index lists
	// Sum but not its duplicate SumAll.
	if len(rep.Hot) != 1 || rep.Hot[0].File != "shared.txt" || rep.Hot[0].Suggestion.ID != "split-shared" || !rep.Hot[0].Created || rep.Hot[0].Touches != 2 {
		t.Errorf("hot files %+v; want shared.txt with a split-shared task", rep.Hot)
	}
	if tr := rep.Task("split-shared"); tr.Status != string(board.TaskDone) {
		t.Errorf("the split task %+v", tr)
	}
	utils, err := ReadUtils(ctx, f.st, r.Run)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range utils {
		names = append(names, u.Name)
	}
	if !slices.Contains(names, "Sum") || slices.Contains(names, "SumAll") {
		t.Errorf("utility index %v; want Sum and not its duplicate SumAll", names)
	}
	if rep.Merge == nil || rep.Merge.Integrated != len(r.Tasks) || rep.Merge.Conflicts != 1 {
		t.Errorf("merge stats %+v", rep.Merge)
	}
	// Nothing left behind: while the hosts run, the only worktrees are
	// their pools' idle ones (the attempts' went back to the pools, which
	// lent them again); once they stop, those are gone too.
	reused := 0
	for _, h := range []string{"h1", "h2"} {
		reused += f.execs[h].PoolStats().Reused
		wts, err := git.New(filepath.Join(f.work, h, r.Run, "repo.git"), git.Options{}).Worktrees(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wts[1:] {
			if filepath.Base(filepath.Dir(w.Path)) != "pool" {
				t.Errorf("%s: an attempt's worktree is left: %+v", h, w)
			}
		}
	}
	if reused == 0 {
		t.Errorf("no attempt got a reused worktree from a pool")
	}
	hcancel()
	f.wg.Wait()
	for _, h := range []string{"h1", "h2"} {
		wts, err := git.New(filepath.Join(f.work, h, r.Run, "repo.git"), git.Options{}).Worktrees(ctx)
		if err != nil || len(wts) != 1 {
			t.Errorf("%s: worktrees after the host stopped %+v, %v", h, wts, err)
		}
		if _, err := os.Stat(filepath.Join(f.work, h, r.Run, "pool")); !os.IsNotExist(err) {
			t.Errorf("%s: the pool directory is left (%v)", h, err)
		}
	}
	if b := gittest.Git(t, f.repo.Dir(), "branch", "--list", "apiary/*"); b != "" {
		t.Errorf("candidate branches left: %s", b)
	}
}

// TestHintsReachEnvelopes: of three reviewed-or-not hints, only the
// approved one is in a later task's envelope.
func TestHintsReachEnvelopes(t *testing.T) {
	t.Parallel()
	f := newSwarmFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i, c := range []board.Conflict{
		{Type: "overlap:go", Tasks: []string{"x/1"}, Resolution: "rebase and re-apply"},
		{Type: "textual:md", Tasks: []string{"x/2"}, Resolution: "edit elsewhere"},
		{Type: "overlap:py", Tasks: []string{"x/3"}, Resolution: "never shown"},
	} {
		if _, first, err := f.st.RecordConflict(ctx, c); err != nil || !first {
			t.Fatalf("RecordConflict: %v %v", first, err)
		}
		switch i {
		case 0:
			_, err := f.st.ReviewHint(ctx, c.Type, board.HintApproved, "tester", "")
			if err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := f.st.ReviewHint(ctx, c.Type, board.HintRejected, "tester", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	plan := f.plan[:strings.Index(f.plan, "tasks:")] + "tasks:\n  - {id: g, objective: record, agent: sh, write_scope: [g-envelope.json]}\n"
	r, err := Publish(ctx, PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan), Options: layout.Options{Shards: 1}})
	if err != nil {
		t.Fatal(err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); f.wg.Wait() }()
	f.host(t, hctx, HostConfig{Host: "h", Run: r.Run, Workers: []WorkerSpec{{ID: "w", Profile: "sh"}},
		Merge: &MergeConfig{Dir: filepath.Join(f.work, "merge"), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}})
	rep, err := WaitRun(ctx, f.st, r.Run, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("run: %v %+v", err, rep)
	}
	head, err := f.repo.RevParse(ctx, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	var env envelope.Envelope
	if err := json.Unmarshal([]byte(gittest.Show(t, f.repo, head, "g-envelope.json")), &env); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(env.Hints, []envelope.Hint{{Type: "overlap:go", Resolution: "rebase and re-apply"}}) {
		t.Fatalf("hints in the envelope = %+v; want only the approved one", env.Hints)
	}
	if _, err := envelope.DecodeEnvelope([]byte(gittest.Show(t, f.repo, head, "g-envelope.json"))); err != nil {
		t.Fatalf("the envelope a worker wrote does not validate: %v", err)
	}
	// The attempt carried a capability, minted with the worker's key,
	// confined to g's write scope and bound to its claim's fencing token.
	key, err := os.ReadFile(filepath.Join(f.work, "h", ".apiary", "cap.key"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := capability.Decode(env.Authority.Capability)
	if err != nil {
		t.Fatalf("g's capability %q: %v", env.Authority.Capability, err)
	}
	l := tok.Lineage()
	if len(l) != 3 || l[0] != r.Run || l[1] != "g" || !strings.HasPrefix(l[2], "f") {
		t.Fatalf("g's capability lineage %v", l)
	}
	fence, _ := strconv.ParseUint(l[2][1:], 10, 64)
	if err := capability.Verify(key, tok, capability.Request{Now: time.Now(), Paths: []string{"g-envelope.json"}, Fence: fence}, nil); err != nil {
		t.Errorf("g's capability does not verify for its own file: %v", err)
	}
	if err := capability.Verify(key, tok, capability.Request{Now: time.Now(), Paths: []string{"other.txt"}}, nil); err == nil {
		t.Error("g's capability allows a file outside its write scope")
	}
	if err := capability.Verify(key, tok, capability.Request{Now: time.Now(), Fence: fence + 1}, nil); err == nil {
		t.Error("g's capability passes under a newer fencing token")
	}
}
