package swarm

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TestFetchWhileWorktreesAreAdded: one worker's fetch of the integration
// branch while the same clone gains and loses worktrees (another worker's
// attempt, the pool's refill) must not fail. Unserialized, git 2.39 failed 23
// of 300 such fetches with "bad object worktrees/wN/HEAD".
func TestFetchWhileWorktreesAreAdded(t *testing.T) {
	t.Parallel()
	src := gittest.NewRepo(t, map[string]string{"a.txt": "0\n"})
	x := &GitExecutor{Dir: t.TempDir(), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}
	run := &layout.Record{Run: "r1", Remote: src.Dir(), IntegrationBranch: "main"}
	ctx := t.Context()
	repo, err := x.clone(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 120
	var wg sync.WaitGroup
	defer wg.Wait() // a failed fetch ends the test; its worktrees still go first
	errs := make(chan error, 1)
	wg.Go(func() {
		for i := range rounds {
			path := filepath.Join(x.Dir, fmt.Sprintf("w%d", i))
			err := x.wt.Do(func() error { return repo.WorktreeAddDetached(ctx, path, "HEAD") })
			if err == nil {
				err = x.wt.Do(func() error { return repo.WorktreeRemove(ctx, path) })
			}
			if err != nil {
				errs <- err
				return
			}
		}
	})
	for i := range rounds {
		want := gittest.Commit(t, src, map[string]string{"a.txt": fmt.Sprintln(i + 1)}, nil)
		got, err := x.fetchIntegration(ctx, repo, run)
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if got != want {
			t.Fatalf("fetch %d: integration branch at %s, want %s", i, got, want)
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("worktree add/remove: %v", err)
	default:
	}
}
