package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/git"
)

// OperatorConfig reads the configuration an operator names (apiary review
// --config). The rules never come from the working tree, which may hold
// the change under review: a file outside the repository at root is read
// and parsed here; a path inside it is returned as a repository path, for
// the review to read as the base commit has it (Request.ConfigPath). An
// empty file returns nothing: the review reads review.yaml as the base has
// it. Problems of the file's content wrap ErrConfig; an unreadable file
// is the error of reading it.
func OperatorConfig(file, root string) (*Config, string, error) {
	if file == "" {
		return nil, "", nil
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	rroot := root
	if real, err := filepath.EvalSymlinks(root); err == nil {
		rroot = real
	}
	if rel, err := filepath.Rel(rroot, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, filepath.ToSlash(rel), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, "", err
	}
	cfg, err := ParseConfig(file, b)
	if err != nil {
		return nil, "", err
	}
	return cfg, "", nil
}

// OpenBoard opens the board a review records its findings on: dsn, else
// the local board of the repository at root (created if need be).
func OpenBoard(ctx context.Context, dsn, root string) (*board.Store, error) {
	if dsn == "" {
		dsn = "local:" + filepath.Join(root, board.DefaultLocalPath)
	}
	st, err := connect.Open(ctx, dsn, connect.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the board %s: %w", dsn, err)
	}
	return st, nil
}

// Uncommitted counts the changes to tracked files in repo's working tree,
// which a review of HEAD does not see (untracked files are not counted).
func Uncommitted(ctx context.Context, repo *git.Repo) (int, error) {
	st, err := repo.Status(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range st {
		if !s.Untracked() {
			n++
		}
	}
	return n, nil
}
