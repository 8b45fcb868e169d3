package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// RevParse resolves a revision ("HEAD", "main", "abc123^{tree}") to an
// object id; ErrNotFound if it does not resolve.
func (r *Repo) RevParse(ctx context.Context, rev string) (string, error) {
	if err := checkRev(rev); err != nil {
		return "", err
	}
	b, code, err := r.run(ctx, call{args: []string{"rev-parse", "--verify", "--quiet", rev}, okExit: []int{1}})
	if err != nil {
		return "", err
	}
	if code == 1 {
		return "", fmt.Errorf("%w: revision %q", ErrNotFound, rev)
	}
	return strings.TrimSpace(string(b)), nil
}

// CurrentBranch returns the short name of the branch HEAD is on;
// ErrDetached if HEAD is detached.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	b, code, err := r.run(ctx, call{args: []string{"symbolic-ref", "--quiet", "--short", "HEAD"}, okExit: []int{1}})
	if err != nil {
		return "", err
	}
	if code == 1 {
		return "", ErrDetached
	}
	return strings.TrimSpace(string(b)), nil
}

// BranchExists reports whether refs/heads/name exists.
func (r *Repo) BranchExists(ctx context.Context, name string) (bool, error) {
	if err := checkRev(name); err != nil {
		return false, err
	}
	_, code, err := r.run(ctx, call{args: []string{"show-ref", "--verify", "--quiet", "refs/heads/" + name}, okExit: []int{1}})
	return err == nil && code == 0, err
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	if err := checkRev(a, b); err != nil {
		return false, err
	}
	_, code, err := r.run(ctx, call{args: []string{"merge-base", "--is-ancestor", a, b}, okExit: []int{1}})
	return err == nil && code == 0, err
}

// MergeBase returns the best common ancestor of a and b; ErrNotFound if
// they share no history.
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	if err := checkRev(a, b); err != nil {
		return "", err
	}
	out, code, err := r.run(ctx, call{args: []string{"merge-base", a, b}, okExit: []int{1}})
	if err != nil {
		return "", err
	}
	if code == 1 {
		return "", fmt.Errorf("%w: no merge base of %s and %s", ErrNotFound, a, b)
	}
	return strings.TrimSpace(string(out)), nil
}

// UpdateRef moves ref (a full name, "refs/heads/main") from old to new
// atomically: git checks under the ref's lock that it still points at old.
// old == "" requires that ref does not exist yet. If the ref holds anything
// else the error is a *RefMovedError (errors.Is(err, ErrRefMoved)) carrying
// the value found, so the caller can recompute against it.
func (r *Repo) UpdateRef(ctx context.Context, ref, newID, old, reason string) error {
	if !strings.HasPrefix(ref, "refs/") {
		return fmt.Errorf("%w: ref %q is not a full ref name", ErrBadArgument, ref)
	}
	if err := checkRev(ref, newID); err != nil {
		return err
	}
	expect := old
	if expect == "" {
		expect = strings.Repeat("0", len(newID)) // the null id: must not exist
	} else if err := checkRev(old); err != nil {
		return err
	}
	if reason == "" {
		reason = "apiary"
	}
	_, _, err := r.run(ctx, call{args: []string{"update-ref", "-m", reason, ref, newID, expect}})
	if err == nil {
		return nil
	}
	var ge *Error
	if !errors.As(err, &ge) || ctx.Err() != nil {
		return err
	}
	// Classify by reading the ref rather than by parsing the message.
	cur, rerr := r.RevParse(ctx, ref)
	switch {
	case errors.Is(rerr, ErrNotFound):
		cur = ""
	case rerr != nil:
		return err
	}
	if cur != old {
		return &RefMovedError{Ref: ref, Expected: old, Actual: cur}
	}
	return err
}

// DeleteBranch deletes a local branch whatever its merge state (branch
// -D). Git refuses to delete a branch checked out in a worktree.
func (r *Repo) DeleteBranch(ctx context.Context, name string) error {
	if err := checkRev(name); err != nil {
		return err
	}
	_, _, err := r.run(ctx, call{args: []string{"branch", "-D", name}})
	var ge *Error
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not found") {
		return fmt.Errorf("%w: branch %q: %w", ErrNotFound, name, err)
	}
	return err
}
