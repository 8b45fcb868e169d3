package swarm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
)

// gitEnv isolates test repositories from the user's git configuration.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@apiary.invalid",
	"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@apiary.invalid"}

// sh runs git in dir and returns its trimmed output.
func sh(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository on branch main with files committed.
func newRepo(t testing.TB, files map[string]string) *git.Repo {
	t.Helper()
	envtest.Command(t, "git")
	dir := t.TempDir()
	sh(t, dir, "init", "--quiet", "--initial-branch=main")
	writeFiles(t, dir, files)
	sh(t, dir, "add", "-A")
	sh(t, dir, "commit", "--quiet", "--allow-empty", "-m", "initial")
	return git.New(dir, git.Options{Env: append(os.Environ(), gitEnv...)})
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// start runs plan src in repo with cfg (Repo is filled in) and fails the
// test on an infrastructure error.
func start(t testing.TB, repo *git.Repo, src string, cfg Config) *Report {
	t.Helper()
	cfg.Repo = repo
	ctx := boundedCtx(t)
	rep, err := Start(ctx, cfg, NewRun{PlanFile: "plan.yaml", PlanData: []byte(src)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("run %s: %v", rep.RunID, context.Cause(ctx))
	}
	return rep
}

// show returns a file's content at a revision.
func show(t testing.TB, repo *git.Repo, rev, path string) string {
	t.Helper()
	b, err := repo.ReadBlob(t.Context(), rev, path)
	if err != nil {
		t.Fatalf("%s:%s: %v", rev, path, err)
	}
	return string(b)
}

// receipt reads a task's receipt from disk.
func receipt(t testing.TB, repo *git.Repo, run, task string) *envelope.Receipt {
	t.Helper()
	rc, err := readReceipt(filepath.Join(RunDir(repo.Dir(), run), "tasks", task))
	if err != nil || rc == nil {
		t.Fatalf("receipt of %s: %v (missing: %v)", task, err, rc == nil)
	}
	return rc
}

// integrations lists (task, kind) along the branch's first-parent chain
// since the run started, oldest first, and checks that every entry has the
// run's trailers.
func integrationsOf(t testing.TB, repo *git.Repo, rep *Report) []string {
	t.Helper()
	log, err := repo.FirstParentLog(t.Context(), rep.StartHead, "refs/heads/"+rep.IntegrationBranch)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(log) - 1; i >= 0; i-- {
		e := log[i]
		task, ok1 := git.TrailerValue(e.Trailers, git.TrailerTask)
		run, ok2 := git.TrailerValue(e.Trailers, git.TrailerRun)
		if !ok1 || !ok2 || run != rep.RunID {
			continue
		}
		kind, ok := git.TrailerValue(e.Trailers, TrailerIntegration)
		if !ok {
			kind = FastForward
		}
		out = append(out, task+":"+kind)
	}
	return out
}

// eventLog collects events for assertions.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) count(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}
