package git

import (
	"fmt"
	"slices"
	"strings"
)

// cone is a sparse checkout in git's cone mode: every file at the top, every
// file directly inside a parent of a chosen directory, and everything under
// a chosen directory (git-sparse-checkout(1), "INTERNALS — CONE PATTERN
// SET"). The zero cone (no directories) is not sparse.
type cone struct {
	dirs    []string        // the chosen directories, normalized, none inside another
	rec     map[string]bool // dirs
	parents map[string]bool // their proper ancestors, "" excluded
}

// newCone normalizes directories the way `git sparse-checkout set --cone`
// does (surrounding slashes dropped, a directory inside another dropped)
// and rejects what git would take for a pattern or a path outside the tree.
func newCone(dirs []string) (*cone, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	var norm []string
	for _, d := range dirs {
		d = strings.Trim(d, "/")
		if d == "" {
			return nil, nil // the top directory: everything
		}
		if strings.ContainsAny(d, "*?[]\\\n\x00") || strings.HasPrefix(d, "!") || strings.HasPrefix(d, "#") {
			return nil, fmt.Errorf("%w: sparse directory %q looks like a pattern", ErrBadArgument, d)
		}
		for c := range strings.SplitSeq(d, "/") {
			if c == "" || c == "." || c == ".." {
				return nil, fmt.Errorf("%w: sparse directory %q", ErrBadArgument, d)
			}
		}
		norm = append(norm, d)
	}
	slices.Sort(norm)
	norm = slices.Compact(norm)
	c := &cone{rec: map[string]bool{}, parents: map[string]bool{}}
	for _, d := range norm { // sorted: a directory comes before those inside it
		if c.under(d) {
			continue
		}
		c.dirs = append(c.dirs, d)
		c.rec[d] = true
	}
	for _, d := range c.dirs {
		for p := parentDir(d); p != ""; p = parentDir(p) {
			c.parents[p] = true
		}
	}
	return c, nil
}

// under reports whether dir is a chosen directory or inside one.
func (c *cone) under(dir string) bool {
	for d := dir; d != ""; d = parentDir(d) {
		if c.rec[d] {
			return true
		}
	}
	return false
}

// includes reports whether the file at path is checked out.
func (c *cone) includes(path string) bool {
	if c == nil {
		return true
	}
	dir := parentDir(path)
	return dir == "" || c.parents[dir] || c.under(dir)
}

// equal reports whether two cones check out the same files.
func (c *cone) equal(o *cone) bool {
	if c == nil || o == nil {
		return c == o
	}
	return slices.Equal(c.dirs, o.dirs)
}

// patterns is the sparse-checkout file git writes for the cone.
func (c *cone) patterns() string {
	var parents, rec []string
	for p := range c.parents {
		parents = append(parents, "/"+p+"/")
	}
	for _, d := range c.dirs {
		rec = append(rec, "/"+d+"/")
	}
	slices.Sort(parents)
	slices.Sort(rec)
	var b strings.Builder
	b.WriteString("/*\n!/*/\n")
	for _, p := range parents {
		b.WriteString(p + "\n!" + p + "*/\n")
	}
	for _, d := range rec {
		b.WriteString(d + "\n")
	}
	return b.String()
}

// sparseConfig is the worktree configuration `git sparse-checkout set
// --cone` writes.
const sparseConfig = "[core]\n\tsparseCheckout = true\n\tsparseCheckoutCone = true\n"

// parentDir returns the directory part of a slash-separated path, "" at the
// top.
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}
