package durable

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Bounds of rw.search.
const (
	searchDefaultMax = 100
	searchHardMax    = 1000
	searchMaxFile    = 10 << 20
	searchLineChars  = 300
	searchProgress   = 200 // files between progress notifications
)

// SearchParams are rw.search's arguments.
type SearchParams struct {
	Pattern         string
	Path            string // default "."
	Regex           bool   // RE2 syntax (linear time); default literal
	Glob            *string
	CaseInsensitive bool
	MaxResults      *int
	Progress        ProgressFunc
}

// Search finds lines matching a literal or regular expression in the text
// files under Path, skipping the state directory, .git, binary files (a NUL
// in the first 8000 bytes), invalid UTF-8, files over 10 MiB and files with
// more than one hard link. Output is
// bounded: at most MaxResults matches (default 100, at most 1000), lines cut
// to 300 characters.
func (w *Workspace) Search(ctx context.Context, p SearchParams) (Result, error) {
	if err := w.allow("rw.search", ""); err != nil {
		return nil, err
	}
	if p.Pattern == "" {
		return nil, encodingErr("pattern_empty", nil)
	}
	limit := searchDefaultMax
	if p.MaxResults != nil {
		limit = *p.MaxResults
	}
	if limit < 1 || limit > searchHardMax {
		return nil, encodingErr("max_results_must_be_in_1..1000", map[string]any{"max_results": limit})
	}
	src := p.Pattern
	if !p.Regex {
		src = regexp.QuoteMeta(src)
	}
	if p.CaseInsensitive {
		src = "(?i)" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, encodingErr("bad_regex: "+err.Error(), map[string]any{"pattern": p.Pattern})
	}
	if p.Glob != nil && !validGlob(*p.Glob) {
		return nil, encodingErr("bad_glob: "+doublestar.ErrBadPattern.Error(), map[string]any{"glob": *p.Glob})
	}
	dir := p.Path
	if dir == "" {
		dir = "."
	}
	t, err := w.resolve(dir)
	if err != nil {
		return nil, err
	}
	sub, err := t.root.r.OpenRoot(t.rel)
	if err != nil {
		return nil, fsError(err, dir)
	}
	defer sub.Close()
	matches := []map[string]any{}
	truncated := false
	scanned := 0
	err = fs.WalkDir(sub.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if t.root == w.ws() && w.inState(path.Join(t.rel, rel)) || d.Name() == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || (p.Glob != nil && !globMatch(*p.Glob, rel) && !globMatch(*p.Glob, d.Name())) {
			return nil
		}
		// Opened once and checked on the descriptor, like rw.read: a hard
		// link to a file outside (or one swapped in mid-walk) is skipped,
		// never read.
		data, _, err := readChecked(sub, rel, rel, searchMaxFile)
		if err != nil || bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 || !utf8.Valid(data) {
			return nil
		}
		scanned++
		if scanned%searchProgress == 0 {
			p.Progress.report(float64(scanned), 0, fmt.Sprintf("%d files searched", scanned))
		}
		for i, line := range strings.Split(string(data), "\n") {
			loc := re.FindStringIndex(line)
			if loc == nil {
				continue
			}
			if len(matches) == limit {
				truncated = true
				return fs.SkipAll
			}
			matches = append(matches, map[string]any{
				"path": joinDisp(t, rel), "line": i + 1, "col": charCol(line, loc[0]), "text": cutRunes(strings.TrimSuffix(line, "\r"), searchLineChars),
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return Result{"ok": true, "matches": matches, "truncated": truncated, "files_scanned": scanned}, nil
}

// cutRunes keeps at most n characters of s, marking a cut with "…".
func cutRunes(s string, n int) string {
	i := 0
	for k := range s {
		if i == n {
			return s[:k] + "…"
		}
		i++
	}
	return s
}

// charCol is the 1-based character column of byte offset off of line.
func charCol(line string, off int) int { return utf8.RuneCountInString(line[:off]) + 1 }
