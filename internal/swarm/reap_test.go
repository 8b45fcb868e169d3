package swarm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/supervise"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TestReapRemote: on a shared bare remote, the candidate branches of a
// swarm run finished on the board are listed by a dry run and deleted once
// the grace period after its end is over; a run still active, a run the
// board does not know, a finished run that recorded another remote, and
// every branch outside refs/heads/apiary/ are never touched. Naming the
// remote as this machine reaches it takes the branches of every finished
// run there.
func TestReapRemote(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
	dir := t.TempDir()
	remote := filepath.Join(dir, "shared.git")
	other := filepath.Join(dir, "other.git")
	for _, r := range []string{remote, other} {
		gittest.Git(t, dir, "init", "--quiet", "--bare", r)
	}
	const fin, act, unknown, elsewhere = "20260101-000000-000001", "20260101-000000-000002", "20260101-000000-000003", "20260101-000000-000004"
	branches := []string{
		"main", "feature", "apiary-" + fin,
		"apiary/" + fin + "/a-3", "apiary/" + fin + "/b-7",
		"apiary/" + act + "/a-4",
		"apiary/" + unknown + "/a-5",
		"apiary/" + elsewhere + "/c-6",
	}
	var specs []string
	for _, b := range branches {
		specs = append(specs, "HEAD:refs/heads/"+b)
	}
	gittest.Git(t, repo.Dir(), append([]string{"push", "--quiet", remote}, specs...)...)

	st, err := connect.Open(ctx, "local:"+filepath.Join(dir, "state.db"), connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ended := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, r := range []*layout.Record{
		{Run: fin, Status: RunFinished, Remote: remote, Created: ended.Add(-time.Hour), Finished: ended},
		{Run: act, Status: RunActive, Remote: remote, Created: ended.Add(-2 * time.Hour)},
		{Run: elsewhere, Status: RunFinished, Remote: other, Created: ended.Add(-time.Hour), Finished: ended},
	} {
		if _, err := st.CAS(ctx, layout.RunKey(r.Run), layout.MustJSON(r), 0, board.NoLease); err != nil {
			t.Fatal(err)
		}
	}

	g := git.New(repo.Dir(), git.Options{Env: append(os.Environ(), gittest.Env...)})
	at := func(d time.Duration) func() time.Time { return func() time.Time { return ended.Add(d) } }
	ids := func(rep supervise.ReapReport) []string {
		var out []string
		for _, rm := range rep.Removed {
			if rm.Err != nil {
				t.Errorf("removing %s: %v", rm.Item.ID, rm.Err)
			}
			if rm.Item.Kind != supervise.KindRemoteBranch {
				t.Errorf("removal of kind %s", rm.Item.Kind)
			}
			_, ref, _ := strings.Cut(rm.Item.ID, " ")
			out = append(out, strings.TrimPrefix(ref, "refs/heads/"))
		}
		slices.Sort(out)
		return out
	}
	onRemote := func(r string) []string {
		var out []string
		for _, l := range strings.Split(gittest.Git(t, dir, "--git-dir", r, "for-each-ref", "--format=%(refname:strip=2)", "refs/heads/"), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
		slices.Sort(out)
		return out
	}
	finished := []string{"apiary/" + fin + "/a-3", "apiary/" + fin + "/b-7"}
	all := slices.Sorted(slices.Values(branches))

	// Within the grace period after the run's end: nothing.
	rep, err := ReapRemote(ctx, RemoteReapConfig{Store: st, Repo: g, Grace: time.Minute, Now: at(30 * time.Second)})
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("within grace: %v %v", ids(rep), err)
	}
	// A dry run lists them and deletes nothing.
	rep, err = ReapRemote(ctx, RemoteReapConfig{Store: st, Repo: g, DryRun: true, Now: at(time.Hour)})
	if got := ids(rep); err != nil || !slices.Equal(got, finished) {
		t.Fatalf("dry run: %v %v, want %v", got, err, finished)
	}
	if got := onRemote(remote); !slices.Equal(got, all) {
		t.Fatalf("the dry run changed the remote: %v", got)
	}
	// Then they go, and only they.
	rep, err = ReapRemote(ctx, RemoteReapConfig{Store: st, Repo: g, Now: at(time.Hour)})
	if got := ids(rep); err != nil || !slices.Equal(got, finished) {
		t.Fatalf("reap: %v %v, want %v", got, err, finished)
	}
	left := slices.DeleteFunc(slices.Clone(all), func(b string) bool { return slices.Contains(finished, b) })
	if got := onRemote(remote); !slices.Equal(got, left) {
		t.Fatalf("left on the remote: %v, want %v", got, left)
	}
	reasons := map[string]string{}
	for _, k := range rep.Kept {
		reasons[k.Item.ID] = k.Reason
	}
	if r := reasons[remote+" refs/heads/apiary/"+act+"/a-4"]; r != "owner alive" {
		t.Errorf("the active run's branch kept as %q", r)
	}
	if rep, err := ReapRemote(ctx, RemoteReapConfig{Store: st, Repo: g, Now: at(time.Hour)}); err != nil || len(rep.Removed) != 0 {
		t.Errorf("second sweep: %v %v", ids(rep), err)
	}

	// Naming the remote (another spelling of it): the finished run that
	// recorded another remote has its branch here taken too; the active
	// and the unknown run's stay.
	rep, err = ReapRemote(ctx, RemoteReapConfig{Store: st, Repo: g, Remote: "file://" + remote, Now: at(time.Hour)})
	if got := ids(rep); err != nil || !slices.Equal(got, []string{"apiary/" + elsewhere + "/c-6"}) {
		t.Fatalf("with the remote named: %v %v", got, err)
	}
	want := []string{"apiary-" + fin, "apiary/" + act + "/a-4", "apiary/" + unknown + "/a-5", "feature", "main"}
	if got := onRemote(remote); !slices.Equal(got, want) {
		t.Fatalf("left on the remote: %v, want %v", got, want)
	}

	if _, err := ReapRemote(ctx, RemoteReapConfig{Store: st}); !errors.Is(err, ErrConfig) {
		t.Errorf("no Repo: %v", err)
	}
}

// TestReapRemoteMoved: a branch that moved after it was listed (someone
// pushed to it again) is not deleted.
func TestReapRemoteMoved(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
	remote := filepath.Join(t.TempDir(), "shared.git")
	gittest.Git(t, repo.Dir(), "init", "--quiet", "--bare", remote)
	ref := "refs/heads/apiary/20260101-000000-000001/a-1"
	gittest.Git(t, repo.Dir(), "push", "--quiet", remote, "HEAD:"+ref)
	listed := gittest.Git(t, repo.Dir(), "rev-parse", "HEAD")
	gittest.Git(t, repo.Dir(), "commit", "--quiet", "--allow-empty", "-m", "again")
	gittest.Git(t, repo.Dir(), "push", "--quiet", remote, "HEAD:"+ref)
	g := git.New(repo.Dir(), git.Options{Env: append(os.Environ(), gittest.Env...)})
	rr := &remoteReaper{repo: g, refs: map[string]remoteRef{"k": {remote: remote, ref: ref, id: listed}}}
	it := supervise.Item{Kind: supervise.KindRemoteBranch, ID: "k"}
	if ok, err := rr.Exists(ctx, it); err != nil || ok {
		t.Errorf("Exists of a moved branch = %v, %v", ok, err)
	}
	if err := rr.Remove(ctx, it); !errors.Is(err, git.ErrRefMoved) {
		t.Errorf("Remove of a moved branch: %v", err)
	}
	if got, _ := g.RemoteRef(ctx, remote, ref); got == "" {
		t.Error("the moved branch was deleted")
	}
}
