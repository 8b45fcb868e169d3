package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// WorktreeAdd creates a linked worktree at path on a new branch started at
// base (a commit id pinned by the caller). ErrExists if the branch or path
// exists already: provisioning is never silently reused.
func (r *Repo) WorktreeAdd(ctx context.Context, path, branch, base string) error {
	if err := checkRev(branch, base); err != nil {
		return err
	}
	if strings.HasPrefix(path, "-") {
		return fmt.Errorf("%w: path %q", ErrBadArgument, path)
	}
	_, _, err := r.run(ctx, call{args: []string{"worktree", "add", "--quiet", "-b", branch, path, base}})
	var ge *Error
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "already exists") {
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	return err
}

// WorktreeRemove removes the linked worktree at path, discarding any changes
// in it (remove --force), and its administrative files. A worktree whose
// directory is already gone is pruned instead. The branch stays; delete it
// with DeleteBranch.
func (r *Repo) WorktreeRemove(ctx context.Context, path string) error {
	if strings.HasPrefix(path, "-") {
		return fmt.Errorf("%w: path %q", ErrBadArgument, path)
	}
	_, _, err := r.run(ctx, call{args: []string{"worktree", "remove", "--force", path}})
	if err == nil {
		return nil
	}
	if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
		return r.WorktreePrune(ctx)
	}
	return err
}

// WorktreePrune removes administrative files of worktrees whose directories
// are gone.
func (r *Repo) WorktreePrune(ctx context.Context) error {
	_, _, err := r.run(ctx, call{args: []string{"worktree", "prune"}})
	return err
}

// Worktree is one entry of `git worktree list`.
type Worktree struct {
	Path     string
	Head     string // commit id; empty in a repository without commits
	Branch   string // full ref ("refs/heads/x"); empty when detached
	Bare     bool
	Detached bool
	Locked   bool
	Prunable bool
}

// Worktrees lists the repository's worktrees, the main one first.
func (r *Repo) Worktrees(ctx context.Context) ([]Worktree, error) {
	b, _, err := r.run(ctx, call{args: []string{"worktree", "list", "--porcelain", "-z"}})
	if err != nil {
		return nil, err
	}
	var out []Worktree
	var cur *Worktree
	for _, f := range strings.Split(string(b), "\x00") {
		if f == "" {
			cur = nil
			continue
		}
		k, v, _ := strings.Cut(f, " ")
		if k == "worktree" {
			out = append(out, Worktree{Path: v})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch k {
		case "HEAD":
			cur.Head = v
		case "branch":
			cur.Branch = v
		case "bare":
			cur.Bare = true
		case "detached":
			cur.Detached = true
		case "locked":
			cur.Locked = true
		case "prunable":
			cur.Prunable = true
		}
	}
	return out, nil
}
