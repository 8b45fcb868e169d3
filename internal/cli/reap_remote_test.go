package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TestReapRemoteBranches: `apiary reap --remote URL` (the repository's
// local board) and `apiary reap --board DSN` (each run's recorded remote)
// read the swarm runs on the board and delete from the shared remote the
// candidate branches of the finished one — listed first by --dry-run,
// logged in .apiary/reaper.log — and nothing else: not the active run's,
// not a branch outside refs/heads/apiary/. Without a board it says so.
func TestReapRemoteBranches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repoDir, remote := filepath.Join(dir, "repo"), filepath.Join(dir, "shared.git")
	gitInit(t, repoDir)
	gitIn(t, dir, "init", "--quiet", "--bare", remote)
	const fin, act = "20260101-000000-000001", "20260101-000000-000002"
	finB, actB := "refs/heads/apiary/"+fin+"/a-3", "refs/heads/apiary/"+act+"/a-4"
	gitIn(t, repoDir, "push", "--quiet", remote, "HEAD:refs/heads/main", "HEAD:"+finB, "HEAD:"+actB, "HEAD:refs/heads/feature")

	reap := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(t.Context(), append([]string{"reap", "--repo", repoDir, "--grace", "1ns"}, args...), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, _, stderr := reap("--remote", remote); code == 0 || !strings.Contains(stderr, "no board at") {
		t.Errorf("without a board: exit %d, %s", code, stderr)
	}

	st, err := connect.Open(t.Context(), "local:"+filepath.Join(repoDir, board.DefaultLocalPath), connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ended := time.Now().Add(-time.Hour).UTC()
	for _, r := range []*layout.Record{
		{Run: fin, Status: layout.RunFinished, Remote: remote, Created: ended.Add(-time.Hour), Finished: ended},
		{Run: act, Status: layout.RunActive, Remote: remote, Created: ended},
	} {
		if _, err := st.CAS(t.Context(), layout.RunKey(r.Run), layout.MustJSON(r), 0, board.NoLease); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	refs := func() string {
		cmd := exec.Command("git", "--git-dir", remote, "for-each-ref", "--format=%(refname)")
		cmd.Env = append(os.Environ(), testGitEnv...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	code, stdout, stderr := reap("--remote", remote, "--dry-run", "--json")
	var lines []struct{ Kind, ID, Run string }
	if err := json.Unmarshal([]byte(stdout), &lines); code != 0 || err != nil || len(lines) != 1 ||
		lines[0].Kind != "remote-branch" || lines[0].ID != remote+" "+finB || lines[0].Run != fin {
		t.Fatalf("dry run: exit %d, %v: %s %s", code, err, stdout, stderr)
	}
	if !strings.Contains(refs(), finB) {
		t.Fatal("the dry run deleted the branch")
	}
	// The run's recorded remote: --board alone does.
	code, stdout, stderr = reap("--board", "local:"+filepath.Join(repoDir, board.DefaultLocalPath))
	if code != 0 || !strings.Contains(stdout, "removed remote-branch "+remote+" "+finB+" (run "+fin+")") {
		t.Fatalf("reap: exit %d\n%s\n%s", code, stdout, stderr)
	}
	got := refs()
	if strings.Contains(got, finB) {
		t.Error("the finished run's branch is still on the remote")
	}
	for _, ref := range []string{actB, "refs/heads/main", "refs/heads/feature"} {
		if !strings.Contains(got, ref) {
			t.Errorf("%s was deleted from the remote", ref)
		}
	}
	logb, _ := os.ReadFile(filepath.Join(repoDir, ".apiary", "reaper.log"))
	if !strings.Contains(string(logb), `"kind":"remote-branch"`) || !strings.Contains(string(logb), finB) {
		t.Errorf("reaper.log:\n%s", logb)
	}
	if code, stdout, _ := reap("--remote", remote); code != 0 || strings.TrimSpace(stdout) != "nothing to reap" {
		t.Errorf("second pass: exit %d: %s", code, stdout)
	}
}
