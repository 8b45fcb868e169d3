package git

import (
	"context"
	"fmt"
	"strings"
)

// StatusEntry is one line of `git status --porcelain=v1`: X is the index
// status and Y the working-tree status ('?' for untracked, 'M', 'A', 'D',
// 'R', ...); OrigPath is set for renames and copies.
type StatusEntry struct {
	X, Y     byte
	Path     string
	OrigPath string
}

// Untracked reports whether the entry is an untracked file.
func (e StatusEntry) Untracked() bool { return e.X == '?' }

// Status lists changed, staged and untracked paths (ignored files are left
// out, untracked directories listed file by file).
func (r *Repo) Status(ctx context.Context) ([]StatusEntry, error) {
	return r.status(ctx, "--untracked-files=all")
}

// DirtyPaths lists tracked paths with staged or unstaged changes; untracked
// files do not count.
func (r *Repo) DirtyPaths(ctx context.Context) ([]string, error) {
	es, err := r.status(ctx, "--untracked-files=no")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out, nil
}

func (r *Repo) status(ctx context.Context, untracked string) ([]StatusEntry, error) {
	b, _, err := r.run(ctx, call{
		args: []string{"status", "--porcelain=v1", "-z", "--ignored=no", untracked},
		env:  []string{"GIT_OPTIONAL_LOCKS=0"}, // do not take the index lock to refresh it
	})
	if err != nil {
		return nil, err
	}
	return parseStatus(string(b))
}

// parseStatus parses `status --porcelain=v1 -z` output: "XY path\0", with
// "XY new\0old\0" for renames and copies.
func parseStatus(s string) ([]StatusEntry, error) {
	var out []StatusEntry
	fields := strings.Split(s, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "" {
			continue
		}
		if len(f) < 4 || f[2] != ' ' {
			return nil, fmt.Errorf("git: unexpected status entry %q", f)
		}
		e := StatusEntry{X: f[0], Y: f[1], Path: f[3:]}
		if e.X == 'R' || e.X == 'C' {
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("git: status rename entry %q lacks its source", f)
			}
			i++
			e.OrigPath = fields[i]
		}
		out = append(out, e)
	}
	return out, nil
}
