package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// A branch moved by update-ref while it is checked out leaves the
// checkout's index and files at the old commit: to git they are a staged
// change that undoes everything since, and a plain `git commit` would
// commit that reversal. The functions here bring such a checkout along
// (files and index together) or, when the user's own changes stand in the
// way, leave it where it was without the trap.

// ErrCheckoutBlocked: local changes in the checkout touch files the new
// commit changes; nothing was moved.
var ErrCheckoutBlocked = errors.New("git: local changes stand in the way")

// IndexTree returns the tree the index holds now (`git write-tree`).
func (r *Repo) IndexTree(ctx context.Context) (string, error) {
	return r.out(ctx, "write-tree")
}

// TreeOf returns the tree of a commit.
func (r *Repo) TreeOf(ctx context.Context, rev string) (string, error) {
	if err := checkRev(rev); err != nil {
		return "", err
	}
	return r.out(ctx, "rev-parse", "--verify", "--quiet", rev+"^{tree}")
}

// RefreshIndex refreshes the index's stat information, so that a file
// whose timestamps changed but whose content did not (touched, rewritten
// with the same bytes) no longer counts as changed.
func (r *Repo) RefreshIndex(ctx context.Context) error {
	_, _, err := r.run(ctx, call{args: []string{"update-index", "-q", "--refresh"}, okExit: []int{1}})
	return err
}

// MoveCheckout moves the index and files of the working tree the Repo
// runs in from commit from (which the index holds now) to commit to, as
// `git checkout` would, without touching HEAD: changes of the user's to
// files that differ between the two are kept; local changes that git
// would have to overwrite make it fail with ErrCheckoutBlocked (naming
// the paths) and leave everything as it was. Touched but unchanged files
// do not block it.
func (r *Repo) MoveCheckout(ctx context.Context, from, to string) error {
	if err := checkRev(from, to); err != nil {
		return err
	}
	if err := r.RefreshIndex(ctx); err != nil {
		return err
	}
	_, _, err := r.run(ctx, call{args: []string{"read-tree", "-m", "-u", from, to}})
	var ge *Error
	if errors.As(err, &ge) {
		return fmt.Errorf("%w: %s", ErrCheckoutBlocked, blockingPaths(ge.Stderr))
	}
	return err
}

// blockingPaths pulls the paths out of read-tree's complaints.
func blockingPaths(stderr string) string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if _, rest, ok := strings.Cut(line, "Entry '"); ok {
			if p, _, ok := strings.Cut(rest, "'"); ok {
				out = append(out, p)
				continue
			}
		}
		if p, ok := strings.CutPrefix(line, "\t"); ok {
			out = append(out, strings.TrimSpace(p))
		}
	}
	if len(out) == 0 {
		return strings.TrimSpace(stderr)
	}
	return strings.Join(out, ", ")
}

// DetachHead points HEAD at commit directly (detached), leaving the index,
// the files and every branch as they are.
func (r *Repo) DetachHead(ctx context.Context, commit string) error {
	if err := checkRev(commit); err != nil {
		return err
	}
	_, _, err := r.run(ctx, call{args: []string{"update-ref", "--no-deref", "-m", "apiary: checkout left at the run's start", "HEAD", commit}})
	return err
}

// Branches lists the local branches whose names begin with prefix.
func (r *Repo) Branches(ctx context.Context, prefix string) ([]string, error) {
	if strings.HasPrefix(prefix, "-") {
		return nil, fmt.Errorf("%w: prefix %q", ErrBadArgument, prefix)
	}
	s, err := r.out(ctx, "for-each-ref", "--format=%(refname:strip=2)", "refs/heads/"+prefix)
	if err != nil || s == "" {
		return nil, err
	}
	var out []string
	for _, b := range strings.Split(s, "\n") {
		if strings.HasPrefix(b, prefix) {
			out = append(out, b)
		}
	}
	return out, nil
}
