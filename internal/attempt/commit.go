package attempt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// commit records what the agent left in the worktree as one commit on the
// base with the Spec's trailers, and returns it; "" when nothing changed.
// Commits the agent made itself are folded into it, so an integration
// branch only ever receives commits apiary made.
func commit(ctx context.Context, s *Spec) (string, error) {
	wt := s.Repo.At(s.Worktree)
	c := s.Commit
	msg, err := git.Message(Clip(c.Subject, 72), c.Body, c.Trailers)
	if err != nil {
		return "", err
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	sig := git.Signature{Name: "apiary (" + c.Author + ")", Email: "apiary@localhost", When: now()}
	_, err = wt.CommitAll(ctx, git.CommitOptions{Message: msg, Author: sig, Exclude: []string{rundir.StateDir},
		Sparse: s.Pool != nil && len(s.Sparse) > 0})
	if err != nil && !errors.Is(err, git.ErrNothingToCommit) {
		return "", fmt.Errorf("committing the result: %w", err)
	}
	committed := err == nil
	head, err := wt.RevParse(ctx, "HEAD")
	if err != nil {
		return "", err
	}
	if head == s.Base {
		return "", nil
	}
	tree, err := wt.RevParse(ctx, "HEAD^{tree}")
	if err != nil {
		return "", err
	}
	baseTree, err := wt.RevParse(ctx, s.Base+"^{tree}")
	if err != nil {
		return "", err
	}
	if tree == baseTree {
		return "", nil
	}
	if committed {
		if parent, err := wt.RevParse(ctx, "HEAD^"); err == nil && parent == s.Base {
			return head, nil
		}
	}
	// The agent committed on its own: squash onto the base.
	squash, err := wt.CommitTree(ctx, tree, []string{s.Base}, msg, sig, git.Signature{})
	if err != nil {
		return "", err
	}
	ref := "HEAD"
	if s.Branch != "" {
		ref = "refs/heads/" + s.Branch
	}
	if err := wt.UpdateRef(ctx, ref, squash, head, "apiary: squash agent commits"); err != nil {
		return "", err
	}
	return squash, nil
}
