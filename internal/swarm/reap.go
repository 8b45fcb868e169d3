package swarm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// RemoteReapConfig configures ReapRemote.
type RemoteReapConfig struct {
	// Store is the board the runs are on. Required.
	Store *board.Store
	// Repo is where git runs; none of its own refs are touched. Required.
	Repo *git.Repo
	// Remote, if set, is the only remote looked at, as this machine
	// reaches the shared remote (a URL or a path), whatever the runs
	// recorded; "" looks at each finished run's recorded remote.
	Remote string
	// Grace is how long after a run finished its branches stay; 0 means
	// 1 minute.
	Grace time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log, if set, sees every removal (see supervise.ReapOptions).
	Log func(supervise.Removal)
}

// candidateNS is the namespace of the branches workers push to a run's
// remote: refs/heads/apiary/RUN/NAME-TOKEN (see candidateRef).
const candidateNS = "refs/heads/apiary/"

// ReapRemote deletes, from the shared remote, the candidate branches of
// swarm runs that have finished on the board: every branch under
// refs/heads/apiary/RUN/ of such a run, once the run has been finished
// for the grace period. A finished run has no pending candidate left
// (each was integrated or rejected), so what is still there was left by a
// worker or merge role that died between pushing or integrating and
// deleting. Nothing else is looked at: not a branch outside that
// namespace, not one of a run the board does not know (a local run's, or
// another board's) or of a run still active — however long ago its hosts
// went, a worker may still claim its tasks and its merge role fetch its
// candidates — and a branch is deleted only while it is still at the
// commit it was listed at. Without Remote, a run's branches are looked
// for on its own recorded remote only.
func ReapRemote(ctx context.Context, cfg RemoteReapConfig) (supervise.ReapReport, error) {
	if cfg.Store == nil || cfg.Repo == nil {
		return supervise.ReapReport{}, fmt.Errorf("%w: RemoteReapConfig needs Store and Repo", ErrConfig)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Minute
	}
	recs, err := ListRecords(ctx, cfg.Store)
	if err != nil {
		return supervise.ReapReport{}, err
	}
	byRun := map[string]*Record{}
	var remotes []string
	seen := map[string]bool{}
	for _, r := range recs {
		byRun[r.Run] = r
		if cfg.Remote == "" && r.Status == RunFinished && r.Remote != "" && !seen[r.Remote] {
			seen[r.Remote] = true
			remotes = append(remotes, r.Remote)
		}
	}
	if cfg.Remote != "" {
		remotes = []string{cfg.Remote}
	}
	rm := &remoteReaper{repo: cfg.Repo, refs: map[string]remoteRef{}}
	var items []supervise.Item
	var errs []error
	for _, remote := range remotes {
		refs, err := cfg.Repo.RemoteRefs(ctx, remote, candidateNS)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the branches of %s: %w", remote, err))
			continue
		}
		for _, ref := range slices.Sorted(maps.Keys(refs)) {
			id := refs[ref]
			run, _, ok := strings.Cut(strings.TrimPrefix(ref, candidateNS), "/")
			r := byRun[run]
			if !ok || r == nil || cfg.Remote == "" && r.Remote != remote {
				continue // not a branch of a run this board knows pushed here
			}
			key := remote + " " + ref
			rm.refs[key] = remoteRef{remote: remote, ref: ref, id: id}
			created := r.Finished
			if created.IsZero() {
				created = r.Created
			}
			items = append(items, supervise.Item{Kind: supervise.KindRemoteBranch, ID: key, Owner: run, Created: created})
		}
	}
	rep, err := supervise.Reap(ctx, items, rm, supervise.ReapOptions{
		Alive:  func(run string) bool { return byRun[run] == nil || byRun[run].Status != RunFinished },
		Grace:  cfg.Grace,
		DryRun: cfg.DryRun,
		Now:    cfg.Now,
		Log:    cfg.Log,
	})
	return rep, errors.Join(append(errs, err)...)
}

// remoteRef is a branch on a remote at the commit it was listed at.
type remoteRef struct{ remote, ref, id string }

// remoteReaper is supervise.Remover for branches on remotes.
type remoteReaper struct {
	repo *git.Repo
	refs map[string]remoteRef // by item ID
}

func (rr *remoteReaper) Exists(ctx context.Context, it supervise.Item) (bool, error) {
	r, ok := rr.refs[it.ID]
	if !ok || it.Kind != supervise.KindRemoteBranch {
		return false, nil
	}
	id, err := rr.repo.RemoteRef(ctx, r.remote, r.ref)
	return err == nil && id == r.id, err
}

func (rr *remoteReaper) Remove(ctx context.Context, it supervise.Item) error {
	r, ok := rr.refs[it.ID]
	if !ok {
		return fmt.Errorf("unknown item %s", it)
	}
	return rr.repo.DeleteRemoteRef(ctx, r.remote, r.ref, r.id)
}
