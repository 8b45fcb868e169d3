package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// Repo is what CheckRepo reads of a git repository; *git.Repo implements it.
type Repo interface {
	// CurrentBranch returns the short name of the branch HEAD points at, or
	// an error when HEAD is detached.
	CurrentBranch(ctx context.Context) (string, error)
	// BranchExists reports whether refs/heads/name exists.
	BranchExists(ctx context.Context, name string) (bool, error)
	// DirtyPaths lists tracked paths with uncommitted changes (staged or
	// not); untracked files do not count.
	DirtyPaths(ctx context.Context) ([]string, error)
}

// CheckRepo checks the repository side of a plan before a run: the
// integration branch exists (an empty integration_branch resolves to the
// current branch, which must exist: HEAD may not be detached) and the
// working tree has no uncommitted changes to tracked files (tasks start from
// commits, so such changes would silently be left out). It returns the
// resolved integration branch, or Errors wrapping ErrNoBranch and
// ErrDirtyTree; a failure to run git is returned as is.
func (p *Plan) CheckRepo(ctx context.Context, r Repo) (string, error) {
	var errs Errors
	add := func(kind error, at []any, format string, args ...any) {
		var ps strictyaml.Pos
		if at != nil {
			ps = p.doc.Pos(at)
		}
		errs = append(errs, &FieldError{File: p.File, Line: ps.Line, Column: ps.Column, Path: envelope.FormatPath(at), Err: kind, Msg: fmt.Sprintf(format, args...)})
	}
	branch := p.IntegrationBranch
	if branch == "" {
		cur, err := r.CurrentBranch(ctx)
		if err != nil {
			add(ErrNoBranch, nil, "no integration_branch given and the repository has no current branch (%v)", err)
		} else {
			branch = cur
		}
	}
	if branch != "" {
		ok, err := r.BranchExists(ctx, branch)
		if err != nil {
			return "", err
		}
		if !ok {
			at := []any{"integration_branch"}
			if p.IntegrationBranch == "" {
				at = nil
			}
			add(ErrNoBranch, at, "branch %q does not exist in the repository", branch)
		}
	}
	dirty, err := r.DirtyPaths(ctx)
	if err != nil {
		return "", err
	}
	if len(dirty) > 0 {
		shown := dirty[:min(len(dirty), 5)]
		more := ""
		if len(dirty) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(dirty)-len(shown))
		}
		add(ErrDirtyTree, nil, "the working tree has uncommitted changes to %s%s; commit or stash them first (tasks start from commits)", strings.Join(shown, ", "), more)
	}
	if len(errs) > 0 {
		return "", errs
	}
	return branch, nil
}
