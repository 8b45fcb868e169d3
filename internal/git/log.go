package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// WorktreeAddDetached creates a linked worktree at path with commit checked
// out on a detached HEAD: a scratch tree (for running checks on a commit)
// that creates no branch. ErrExists if the path exists already.
func (r *Repo) WorktreeAddDetached(ctx context.Context, path, commit string) error {
	if err := checkRev(commit); err != nil {
		return err
	}
	if strings.HasPrefix(path, "-") {
		return fmt.Errorf("%w: path %q", ErrBadArgument, path)
	}
	_, _, err := r.run(ctx, call{args: []string{"worktree", "add", "--quiet", "--detach", path, commit}})
	var ge *Error
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "already exists") {
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	return err
}

// TopLevel returns the absolute path of the top directory of the working
// tree the Repo runs in.
func (r *Repo) TopLevel(ctx context.Context) (string, error) {
	return r.out(ctx, "rev-parse", "--show-toplevel")
}

// LogEntry is one commit of FirstParentLog.
type LogEntry struct {
	ID       string
	Parents  []string
	Trailers []Trailer
}

// FirstParentLog lists the commits reachable from to by first parents only
// and not reachable from from (from "" means the whole chain), newest first,
// with their trailers. On an integration branch whose commits are either
// fast-forwarded task commits or merges made by the integrator, this is the
// sequence of integrations.
func (r *Repo) FirstParentLog(ctx context.Context, from, to string) ([]LogEntry, error) {
	if err := checkRev(to); err != nil {
		return nil, err
	}
	rng := to
	if from != "" {
		if err := checkRev(from); err != nil {
			return nil, err
		}
		rng = from + ".." + to
	}
	// Records are NUL-terminated triples: id, parents, trailers.
	b, _, err := r.run(ctx, call{args: []string{"log", "--first-parent", "--no-decorate", "-z",
		"--format=%H%x00%P%x00%(trailers:only=true,unfold=true)", rng, "--"}})
	if err != nil {
		return nil, err
	}
	f := strings.Split(string(b), "\x00")
	var out []LogEntry
	for i := 0; i+2 < len(f); i += 3 {
		id := strings.TrimSpace(f[i])
		if id == "" {
			break
		}
		e := LogEntry{ID: id, Parents: strings.Fields(f[i+1])}
		for _, line := range strings.Split(f[i+2], "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				e.Trailers = append(e.Trailers, Trailer{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// SyncWorktree moves the index and files of the working tree the Repo runs
// in from the tree its index holds now to commit to, as a checkout would,
// without touching HEAD (`git read-tree -m -u`). Use it after the branch
// HEAD points at was moved by update-ref. Local changes git would have to
// overwrite make it fail and leave everything as it was.
func (r *Repo) SyncWorktree(ctx context.Context, to string) error {
	if err := checkRev(to); err != nil {
		return err
	}
	// A touched file whose content is unchanged must not block the move.
	if err := r.RefreshIndex(ctx); err != nil {
		return err
	}
	cur, err := r.out(ctx, "write-tree")
	if err != nil {
		return err
	}
	_, _, err = r.run(ctx, call{args: []string{"read-tree", "-m", "-u", cur, to}})
	return err
}
