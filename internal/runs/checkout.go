package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// The run moves its integration branch by update-ref. When that branch is
// the one checked out in the main working tree, the checkout's index and
// files still hold the commit they held before, which git shows as a staged
// change undoing the run's work. The run brings the checkout along when it
// ends (and a resume or `apiary reap` does it for a run that died first):
// index and files together, keeping the user's own changes; when one of
// those is to a file the run changed too, the files stay as they are and
// HEAD is detached at the commit they match, so nothing looks staged, and
// the report says how to finish.

// CheckoutError says why the checkout could not be brought along and what
// to do.
type CheckoutError struct {
	Branch string // the integration branch
	At     string // the commit the checkout's files and HEAD are left at
	Head   string // the branch's head
	Paths  string // the local changes in the way
}

func (e *CheckoutError) Error() string {
	return fmt.Sprintf("the checkout of %s has local changes to %s, which the run changed too; it is left at %s with HEAD detached there and your changes kept",
		e.Branch, e.Paths, short(e.At))
}

// Hint is the command line that finishes the job.
func (e *CheckoutError) Hint() string {
	return fmt.Sprintf("commit or stash your changes (git stash), then: git checkout %s (and git stash pop)", e.Branch)
}

func short(c string) string { return c[:min(len(c), 12)] }

// bringCheckout moves the main checkout to its branch's head when it has
// branch checked out and its index is behind; it returns the commit the
// checkout holds afterwards ("" when branch is not checked out). With
// strict, only a checkout whose index is exactly a commit of the branch's
// first-parent chain since start is moved (a dead run's, found by reap:
// anything else may be the user's own doing).
func bringCheckout(ctx context.Context, repo *git.Repo, lock *rundir.WorktreeLock, branch, start string, strict bool) (string, error) {
	if b, err := repo.CurrentBranch(ctx); err != nil || b != branch {
		return "", nil
	}
	var at string
	err := lock.Do(func() error {
		head, err := repo.RevParse(ctx, "refs/heads/"+branch)
		if err != nil {
			return err
		}
		idx, err := repo.IndexTree(ctx)
		if err != nil {
			return err
		}
		if ht, err := repo.TreeOf(ctx, head); err == nil && ht == idx {
			at = head
			return repo.RefreshIndex(ctx)
		}
		from, exact, err := indexCommit(ctx, repo, idx, start, head)
		if err != nil {
			return err
		}
		if from == "" || strict && !exact {
			at = ""
			if strict {
				return nil
			}
			return fmt.Errorf("the checkout of %s holds none of the run's commits", branch)
		}
		err = repo.MoveCheckout(ctx, from, head)
		if errors.Is(err, git.ErrCheckoutBlocked) {
			if derr := repo.DetachHead(ctx, from); derr != nil {
				return fmt.Errorf("%w; and detaching HEAD: %w", err, derr)
			}
			at = from
			_, paths, _ := cutErr(err)
			return &CheckoutError{Branch: branch, At: from, Head: head, Paths: paths}
		}
		if err != nil {
			return err
		}
		at = head
		return nil
	})
	return at, err
}

func cutErr(err error) (string, string, bool) {
	s := err.Error()
	pre := git.ErrCheckoutBlocked.Error() + ": "
	if len(s) > len(pre) && s[:len(pre)] == pre {
		return pre, s[len(pre):], true
	}
	return "", s, false
}

// maxCheckoutSearch bounds the commits indexCommit compares.
const maxCheckoutSearch = 500

// indexCommit finds the commit of the branch's first-parent chain from
// start to head whose tree the index holds (exact), or, when the user has
// staged changes of their own, the one it differs least from.
func indexCommit(ctx context.Context, repo *git.Repo, idx, start, head string) (string, bool, error) {
	log, err := repo.FirstParentLog(ctx, start, head)
	if err != nil {
		return "", false, err
	}
	chain := make([]string, 0, len(log)+1)
	for _, e := range log {
		chain = append(chain, e.ID)
	}
	chain = append(chain, start)
	if len(chain) > maxCheckoutSearch {
		chain = chain[:maxCheckoutSearch]
	}
	for _, c := range chain {
		if t, err := repo.TreeOf(ctx, c); err == nil && t == idx {
			return c, true, nil
		}
	}
	best, fewest := "", -1
	for _, c := range chain {
		t, err := repo.TreeOf(ctx, c)
		if err != nil {
			continue
		}
		ch, err := repo.DiffNameStatus(ctx, t, idx)
		if err != nil {
			continue
		}
		if fewest < 0 || len(ch) < fewest {
			best, fewest = c, len(ch)
		}
	}
	return best, false, nil
}

// syncCheckout brings the main checkout along at the end of the run and
// records how that went (EvCheckoutSynced: Commit, or Reason and the hint).
func (r *runner) syncCheckout(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
	defer cancel()
	at, err := bringCheckout(cctx, r.repo, r.wt, r.rec.IntegrationBranch, r.rec.StartHead, false)
	switch {
	case err != nil:
		ev := Event{Kind: rundir.EvCheckoutSynced, Branch: r.rec.IntegrationBranch, Reason: err.Error(), Base: at}
		var ce *CheckoutError
		if errors.As(err, &ce) {
			ev.Path = ce.Hint()
		}
		_ = r.st.Emit(ev)
	case at != "":
		_ = r.st.Emit(Event{Kind: rundir.EvCheckoutSynced, Branch: r.rec.IntegrationBranch, Commit: at})
	}
}
