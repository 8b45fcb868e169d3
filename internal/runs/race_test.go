package runs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// raceCheck is every task's check: each t*/x.txt says ok. The second time
// it runs with MOVE set (after a first integration), it also moves the
// integration branch itself, as another writer would, so that the CAS
// after this check fails.
const raceCheck = `set -e
for f in */x.txt; do [ -e "$f" ] || continue; [ "$(cat "$f")" = ok ] || { echo "bad $f"; exit 1; }; done
move() {
  h=$(git rev-parse refs/heads/main)
  idx=$(mktemp); rm -f "$idx"
  GIT_INDEX_FILE=$idx git read-tree "$h"
  b=$(echo external | git hash-object -w --stdin)
  GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$b,external.txt"
  tr=$(GIT_INDEX_FILE=$idx git write-tree); rm -f "$idx"
  c=$(git -c user.name=other -c user.email=other@example.invalid commit-tree "$tr" -p "$h" -m "another writer")
  git update-ref refs/heads/main "$c" "$h" 2>/dev/null
}
if [ -n "$MOVE" ] && ! mkdir "$MOVE.first" 2>/dev/null && mkdir "$MOVE" 2>/dev/null; then
  until move; do :; done # the other run may move the branch too
fi
`

// TestRaceIntegration: two runs of 11 tasks each, with disjoint write
// scopes, whose agents all finish at once, integrate into one branch
// concurrently; another writer moves the branch once more. Every task
// integrates exactly once (the first by fast-forward, the rest by merge),
// the final tree has every change, every integration commit passes the
// check, and the CAS failures were recomputed.
func TestRaceIntegration(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"check.sh": raceCheck})
	move := filepath.Join(t.TempDir(), "moved")
	const perRun = 11
	plans := make([]string, 2)
	for r := range plans {
		var b strings.Builder
		env := ""
		if r == 0 { // only run 0's checks move the branch
			env = "MOVE=" + move + " "
		}
		fmt.Fprintf(&b, "version: 1\nmax_parallel: %d\nagents:\n  sh: {kind: command, argv: [\"sh\", \"-c\", \"mkdir -p $APIARY_TASK && echo ok > $APIARY_TASK/x.txt\"]}\ntasks:\n", perRun)
		for i := range perRun {
			fmt.Fprintf(&b, "  - {id: r%d-t%02d, objective: x, agent: sh, write_scope: [r%d-t%02d/], checks: [\"%ssh check.sh\"]}\n", r, i, r, i, env)
		}
		plans[r] = b.String()
	}
	reps := make([]*Report, 2)
	var wg sync.WaitGroup
	for r := range plans {
		// Run 0 checks one candidate at a time (so its second check runs
		// after a first integration); run 1 checks up to 11 at once.
		cfg := Config{}
		if r == 0 {
			cfg.MaxParallelChecks = 1
		}
		wg.Go(func() { reps[r] = start(t, repo, plans[r], cfg) })
	}
	wg.Wait()
	ctx := t.Context()
	kinds := map[string]int{}
	seen := map[string]int{}
	retries := 0
	for _, rep := range reps {
		if !rep.OK() {
			t.Fatalf("run %s: %s %+v", rep.RunID, rep.Status, rep.Tasks)
		}
		retries += rep.CASRetries
		for _, in := range integrationsOf(t, repo, rep) {
			task, kind, _ := strings.Cut(in, ":")
			seen[task]++
			kinds[kind]++
		}
	}
	if len(seen) != 2*perRun {
		t.Errorf("%d tasks on the branch, want %d", len(seen), 2*perRun)
	}
	for task, n := range seen {
		if n != 1 {
			t.Errorf("%s integrated %d times", task, n)
		}
	}
	if kinds[attempt.FastForward] < 1 || kinds[attempt.Merge] < 1 || kinds[attempt.FastForward]+kinds[attempt.Merge] != 2*perRun {
		t.Errorf("integration kinds %v", kinds)
	}
	if retries < 1 {
		t.Error("no CAS failure was recomputed")
	}
	head := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	if gittest.Show(t, repo, head, "external.txt") != "external\n" {
		t.Error("the other writer's commit was lost")
	}
	for task := range seen {
		if s := gittest.Show(t, repo, head, task+"/x.txt"); s != "ok\n" {
			t.Errorf("%s/x.txt = %q", task, s)
		}
	}
	// Every commit the integrator put on the first-parent chain passes the
	// check (run again here, in a checkout of each).
	log, err := repo.FirstParentLog(ctx, reps[0].StartHead, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		if _, ok := git.TrailerValue(e.Trailers, git.TrailerTask); !ok {
			continue
		}
		wt := filepath.Join(t.TempDir(), "c")
		if err := repo.WorktreeAddDetached(ctx, wt, e.ID); err != nil {
			t.Fatal(err)
		}
		out, err := runSh(wt, "sh", "check.sh")
		if err != nil {
			t.Errorf("check fails on integration commit %s: %v %s", e.ID, err, out)
		}
		if err := repo.WorktreeRemove(ctx, wt); err != nil {
			t.Fatal(err)
		}
	}
}

func runSh(dir string, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gittest.Env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
