package git

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// MergeResult is the outcome of an in-memory three-way merge.
type MergeResult struct {
	// Tree is the merged tree; with conflicts, conflicted files hold
	// conflict markers.
	Tree      string
	Clean     bool
	Conflicts []string       // paths with conflicts, in git's order
	Messages  []MergeMessage // git's conflict notices (empty when clean)
}

// MergeMessage is one informational record of merge-tree: the paths it
// concerns, a stable type ("CONFLICT (contents)", "Auto-merging", ...) and
// a human-readable message.
type MergeMessage struct {
	Paths []string
	Type  string
	Text  string
}

// MergeTreeOptions tune MergeTree.
type MergeTreeOptions struct {
	// MergeBase forces the merge base (git ≥ 2.40; ErrUnsupported before).
	// Empty: git computes it from the two commits' history.
	MergeBase string
}

// MergeTree merges commits ours and theirs without touching any worktree,
// index or ref (`git merge-tree --write-tree`) and writes the resulting
// tree. Conflicts are a result (Clean false), not an error.
func (r *Repo) MergeTree(ctx context.Context, ours, theirs string, opt MergeTreeOptions) (*MergeResult, error) {
	if err := checkRev(ours, theirs); err != nil {
		return nil, err
	}
	args := []string{"merge-tree", "--write-tree", "-z", "--name-only"}
	if opt.MergeBase != "" {
		if err := checkRev(opt.MergeBase); err != nil {
			return nil, err
		}
		ok, err := r.atLeast(ctx, 2, 40)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: merge-tree --merge-base needs git 2.40", ErrUnsupported)
		}
		args = append(args, "--merge-base="+opt.MergeBase)
	}
	args = append(args, ours, theirs)
	b, code, err := r.run(ctx, call{args: args, okExit: []int{1}})
	if err != nil {
		return nil, err
	}
	res, err := parseMergeTree(string(b), code == 0)
	if err != nil {
		return nil, fmt.Errorf("git merge-tree: %w", err)
	}
	return res, nil
}

// parseMergeTree parses `merge-tree --write-tree -z --name-only` output:
// "TREE\0", then conflicted paths each followed by NUL, then (when there
// are messages) a NUL and records "N\0path1\0..pathN\0TYPE\0MESSAGE\0".
func parseMergeTree(s string, clean bool) (*MergeResult, error) {
	tree, rest, ok := strings.Cut(s, "\x00")
	if !ok || tree == "" {
		return nil, fmt.Errorf("no tree id in output %q", s)
	}
	res := &MergeResult{Tree: tree, Clean: clean}
	if clean {
		return res, nil
	}
	f := strings.Split(rest, "\x00")
	i := 0
	for ; i < len(f) && f[i] != ""; i++ {
		res.Conflicts = append(res.Conflicts, f[i])
	}
	i++ // the empty field that starts the messages section
	for i < len(f) && f[i] != "" {
		n, err := strconv.Atoi(f[i])
		if err != nil || n < 0 || i+1+n+2 > len(f) {
			return nil, fmt.Errorf("bad message record at field %d", i)
		}
		m := MergeMessage{Paths: f[i+1 : i+1+n], Type: f[i+1+n], Text: f[i+2+n]}
		res.Messages = append(res.Messages, m)
		i += n + 3
	}
	return res, nil
}
