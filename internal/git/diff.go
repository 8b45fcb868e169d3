package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Change is one path that differs between two commits. Status is 'A'
// (added), 'D' (deleted), 'M' (modified) or 'T' (type changed); renames are
// reported as a deletion and an addition.
type Change struct {
	Status byte
	Path   string
}

// DiffNameStatus lists the paths that differ between commits from and to.
func (r *Repo) DiffNameStatus(ctx context.Context, from, to string) ([]Change, error) {
	if err := checkRev(from, to); err != nil {
		return nil, err
	}
	b, _, err := r.run(ctx, call{args: []string{"diff", "--name-status", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", from, to, "--"}})
	if err != nil {
		return nil, err
	}
	f := strings.Split(string(b), "\x00")
	var out []Change
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == "" {
			break
		}
		out = append(out, Change{Status: f[i][0], Path: f[i+1]})
	}
	return out, nil
}

// FilePatch is the zero-context diff of one file.
type FilePatch struct {
	OldPath string // "" when the file was added
	NewPath string // "" when the file was deleted
	Binary  bool
	Lines   []Line // removed and added lines, in diff order
}

// Path returns the file's new path, or its old path if it was deleted.
func (p FilePatch) Path() string {
	if p.NewPath != "" {
		return p.NewPath
	}
	return p.OldPath
}

// Line is a removed ('-') or added ('+') line. OldLine is its line number in
// the old file (for '-'), NewLine in the new file (for '+').
type Line struct {
	Op      byte
	OldLine int
	NewLine int
	Text    string
}

// DiffPatch returns the zero-context unified diff between commits from and
// to (renames as deletion plus addition), limited to paths when given.
func (r *Repo) DiffPatch(ctx context.Context, from, to string, paths ...string) ([]FilePatch, error) {
	if err := checkRev(from, to); err != nil {
		return nil, err
	}
	args := []string{"diff", "--unified=0", "--no-color", "--no-renames", "--no-ext-diff", "--no-textconv",
		"--src-prefix=a/", "--dst-prefix=b/", "--ignore-submodules=none", from, to, "--"}
	args = append(args, paths...)
	b, _, err := r.run(ctx, call{args: args})
	if err != nil {
		return nil, err
	}
	return ParsePatch(string(b))
}

// ParsePatch parses `git diff` output in unified format. It understands the
// file headers (---/+++, "Binary files ... differ") and hunk headers and
// ignores extended headers it does not need (modes, index lines).
func ParsePatch(s string) ([]FilePatch, error) {
	var out []FilePatch
	var cur *FilePatch
	var oldLn, newLn, oldLeft, newLeft int
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		inHunk := oldLeft > 0 || newLeft > 0
		switch {
		case inHunk && strings.HasPrefix(l, "-"):
			if oldLeft == 0 {
				return nil, fmt.Errorf("git: patch line %d: more removed lines than the hunk header says", i+1)
			}
			cur.Lines = append(cur.Lines, Line{Op: '-', OldLine: oldLn, Text: l[1:]})
			oldLn++
			oldLeft--
		case inHunk && strings.HasPrefix(l, "+"):
			if newLeft == 0 {
				return nil, fmt.Errorf("git: patch line %d: more added lines than the hunk header says", i+1)
			}
			cur.Lines = append(cur.Lines, Line{Op: '+', NewLine: newLn, Text: l[1:]})
			newLn++
			newLeft--
		case inHunk && strings.HasPrefix(l, " "):
			oldLn, newLn = oldLn+1, newLn+1
			oldLeft, newLeft = oldLeft-1, newLeft-1
		case strings.HasPrefix(l, `\`): // "\ No newline at end of file"
		case inHunk:
			return nil, fmt.Errorf("git: patch line %d: hunk ends early", i+1)
		case strings.HasPrefix(l, "diff --git "):
			out = append(out, FilePatch{})
			cur = &out[len(out)-1]
			// Paths come from ---/+++ (or the binary line); fall back on the
			// header for files with no content change (mode only, empty).
			if a, b, ok := splitGitHeader(l[len("diff --git "):]); ok {
				cur.OldPath, cur.NewPath = a, b
			}
		case cur == nil:
			// Preamble before the first file: ignore.
		case strings.HasPrefix(l, "new file mode"):
			cur.OldPath = ""
		case strings.HasPrefix(l, "deleted file mode"):
			cur.NewPath = ""
		case strings.HasPrefix(l, "--- "):
			p, err := headerPath(l[4:], "a/")
			if err != nil {
				return nil, fmt.Errorf("git: patch line %d: %w", i+1, err)
			}
			cur.OldPath = p
		case strings.HasPrefix(l, "+++ "):
			p, err := headerPath(l[4:], "b/")
			if err != nil {
				return nil, fmt.Errorf("git: patch line %d: %w", i+1, err)
			}
			cur.NewPath = p
		case strings.HasPrefix(l, "Binary files "):
			cur.Binary = true
		case strings.HasPrefix(l, "@@ "):
			var err error
			oldLn, oldLeft, newLn, newLeft, err = parseHunkHeader(l)
			if err != nil {
				return nil, fmt.Errorf("git: patch line %d: %w", i+1, err)
			}
		}
	}
	if oldLeft > 0 || newLeft > 0 {
		return nil, errors.New("git: patch ends inside a hunk")
	}
	return out, nil
}

// parseHunkHeader parses "@@ -a[,b] +c[,d] @@ ...". For a count of zero the
// start is the line before the change; the first changed line is start+1
// then, and start otherwise.
func parseHunkHeader(l string) (oldStart, oldCount, newStart, newCount int, err error) {
	f := strings.Fields(l)
	if len(f) < 4 || f[3] != "@@" || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, 0, 0, fmt.Errorf("bad hunk header %q", l)
	}
	rng := func(s string) (int, int, error) {
		a, b, has := strings.Cut(s, ",")
		start, err := strconv.Atoi(a)
		if err != nil || start < 0 {
			return 0, 0, fmt.Errorf("bad hunk range %q", s)
		}
		n := 1
		if has {
			if n, err = strconv.Atoi(b); err != nil || n < 0 {
				return 0, 0, fmt.Errorf("bad hunk range %q", s)
			}
		}
		if n == 0 {
			start++
		} else if start == 0 {
			return 0, 0, fmt.Errorf("bad hunk range %q", s)
		}
		return start, n, nil
	}
	if oldStart, oldCount, err = rng(f[1][1:]); err != nil {
		return
	}
	newStart, newCount, err = rng(f[2][1:])
	return
}

// headerPath parses the path of a ---/+++ line: /dev/null, prefix+path, or
// a C-quoted "prefix+path".
func headerPath(s, prefix string) (string, error) {
	s = strings.TrimSuffix(s, "\t")
	if s == "/dev/null" {
		return "", nil
	}
	if strings.HasPrefix(s, `"`) {
		u, err := unquoteC(s)
		if err != nil {
			return "", err
		}
		s = u
	}
	p, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", fmt.Errorf("path %q lacks the %q prefix", s, prefix)
	}
	return p, nil
}

// splitGitHeader splits "a/x b/x" (unquoted, same path on both sides) or
// quoted forms; ok is false when it cannot be split unambiguously.
func splitGitHeader(s string) (string, string, bool) {
	if strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`) {
		return "", "", false
	}
	// Unquoted names contain no special characters but may contain spaces:
	// the split is unambiguous when both halves name the same path.
	if len(s)%2 == 1 {
		h := (len(s) - 1) / 2
		a, b := s[:h], s[h+1:]
		if strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return a[2:], b[2:], true
		}
	}
	return "", "", false
}

// unquoteC undoes git's C-style path quoting ("a/\303\251.go").
func unquoteC(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", fmt.Errorf("bad quoted path %s", s)
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s)-1 {
			return "", fmt.Errorf("bad quoted path %s", s)
		}
		switch c = s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\':
			b.WriteByte(c)
		default:
			if c < '0' || c > '3' || i+2 >= len(s)-1 {
				return "", fmt.Errorf("bad escape in quoted path %s", s)
			}
			n, err := strconv.ParseUint(s[i:i+3], 8, 8)
			if err != nil {
				return "", fmt.Errorf("bad escape in quoted path %s", s)
			}
			b.WriteByte(byte(n))
			i += 2
		}
	}
	return b.String(), nil
}

// ReadBlob returns the content of path at commit rev; ErrNotFound if the
// path does not exist there.
func (r *Repo) ReadBlob(ctx context.Context, rev, path string) ([]byte, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	obj := rev + ":" + path
	_, code, err := r.run(ctx, call{args: []string{"cat-file", "-e", obj}, okExit: []int{1, 128}})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, obj)
	}
	b, _, err := r.run(ctx, call{args: []string{"cat-file", "blob", obj}})
	return b, err
}

// ReadBlobs returns the contents of paths at commit rev, read by one
// `cat-file --batch` process; a path absent at rev is absent from the map.
func (r *Repo) ReadBlobs(ctx context.Context, rev string, paths []string) (map[string][]byte, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	var in strings.Builder
	for _, p := range paths {
		if strings.ContainsAny(p, "\n") {
			return nil, fmt.Errorf("%w: path %q", ErrBadArgument, p)
		}
		in.WriteString(rev + ":" + p + "\n")
	}
	b, _, err := r.run(ctx, call{args: []string{"cat-file", "--batch"}, stdin: []byte(in.String())})
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("git cat-file --batch: truncated output")
		}
		header := string(b[:nl])
		b = b[nl+1:]
		if strings.HasSuffix(header, " missing") || strings.HasSuffix(header, " ambiguous") {
			continue
		}
		f := strings.Fields(header) // "<oid> <type> <size>"
		if len(f) != 3 {
			return nil, fmt.Errorf("git cat-file --batch: bad header %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size < 0 || size+1 > len(b) {
			return nil, fmt.Errorf("git cat-file --batch: bad header %q", header)
		}
		if f[1] == "blob" {
			out[p] = b[:size:size]
		}
		b = b[size+1:]
	}
	return out, nil
}
