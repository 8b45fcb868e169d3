package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// worktreeDir is where the review's checkouts live.
func (rv *reviewRun) worktreeDir(name string) string {
	return filepath.Join(rv.root, rundir.StateDir, "worktrees", "review-"+rv.id, name)
}

// checkout resolves the commits, computes the change and checks out its
// head (and base, if an analyser needs it) read-only.
func (rv *reviewRun) checkout(ctx context.Context) error {
	var err error
	if rv.base, err = rv.repo.RevParse(ctx, rv.req.Base+"^{commit}"); err != nil {
		return fmt.Errorf("%w: base %q: %w", ErrRequest, rv.req.Base, err)
	}
	if rv.req.Patch != "" {
		if rv.head, err = rv.applyPatch(ctx); err != nil {
			return err
		}
	} else if rv.head, err = rv.repo.RevParse(ctx, rv.req.Head+"^{commit}"); err != nil {
		return fmt.Errorf("%w: head %q: %w", ErrRequest, rv.req.Head, err)
	}
	if rv.mergeBase, err = rv.repo.MergeBase(ctx, rv.base, rv.head); err != nil {
		return fmt.Errorf("%w: %s and %s share no history: %w", ErrRequest, rv.req.Base, rv.head, err)
	}
	if err := rv.loadConfig(ctx); err != nil {
		return err
	}
	if rv.changes, err = rv.repo.DiffNameStatus(ctx, rv.mergeBase, rv.head); err != nil {
		return err
	}
	for _, c := range rv.changes {
		rv.paths = append(rv.paths, c.Path)
	}
	rv.tags = append(rv.tags, rv.req.Tags...)
	if log, err := rv.repo.FirstParentLog(ctx, rv.mergeBase, rv.head); err == nil {
		for _, e := range log {
			if v, ok := git.TrailerValue(e.Trailers, "Apiary-Tags"); ok {
				for _, t := range strings.Split(v, ",") {
					if t = strings.TrimSpace(t); t != "" && !slices.Contains(rv.tags, t) {
						rv.tags = append(rv.tags, t)
					}
				}
			}
		}
	}
	rv.headDir = rv.worktreeDir("head")
	if err := rv.addReadOnly(ctx, rv.headDir, rv.head); err != nil {
		return err
	}
	if rv.needsBase() {
		rv.baseDir = rv.worktreeDir("base")
		if err := rv.addReadOnly(ctx, rv.baseDir, rv.mergeBase); err != nil {
			return err
		}
	}
	return nil
}

// addReadOnly checks commit out at dir (detached) and makes it read-only.
func (rv *reviewRun) addReadOnly(ctx context.Context, dir, commit string) error {
	if err := rv.wt.Do(func() error { return rv.repo.WorktreeAddDetached(ctx, dir, commit) }); err != nil {
		return fmt.Errorf("review checkout: %w", err)
	}
	return setWritable(dir, false)
}

// removeWorktrees makes the checkouts writable again and removes them;
// it runs even after ctx ended and may be called more than once.
func (rv *reviewRun) removeWorktrees() {
	ctx, cancel := context.WithTimeout(context.Background(), attempt.CleanupTimeout)
	defer cancel()
	for _, d := range []string{rv.headDir, rv.baseDir} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if err := setWritable(d, true); err != nil {
			rv.log.Warn("review: restoring permissions", "path", d, "err", err)
		}
		if err := rv.wt.Do(func() error { return rv.repo.WorktreeRemove(ctx, d) }); err != nil {
			rv.log.Warn("review: removing checkout", "path", d, "err", err)
		}
	}
	os.Remove(filepath.Dir(rv.worktreeDir("head")))
}

// setWritable removes (or restores) the write permission of everything
// under dir; symbolic links are left alone.
func setWritable(dir string, w bool) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm()
		if w {
			mode |= 0o200
		} else {
			mode &^= 0o222
		}
		return os.Chmod(p, mode)
	})
}

// KindCheckoutModified is the finding the review itself reports when an
// analyser wrote to the read-only checkouts anyway (file permissions do
// not stop a process running as root): the findings of that round may rest
// on a tree that is not the change, so the review fails closed.
const KindCheckoutModified = "checkout-modified"

// reviewSelf is the analyser name of the review's own findings.
const reviewSelf = "review"

// checkIntact verifies after a stage that the shared checkouts still hold
// exactly their commits — nothing modified, nothing added, ignored files
// included — and that no agent task wrote to its own checkout, and
// reports (and returns the ids of) a checkout-modified finding for each
// that did.
func (rv *reviewRun) checkIntact(ctx context.Context, stage string) ([]string, error) {
	var fs []Finding
	for _, d := range []string{rv.headDir, rv.baseDir} {
		if d == "" {
			continue
		}
		st, err := rv.repo.At(d).StatusIgnored(ctx)
		if err != nil {
			return nil, fmt.Errorf("review: checking the review checkout: %w", err)
		}
		if len(st) == 0 {
			continue
		}
		var paths []string
		for _, e := range st {
			paths = append(paths, e.Path)
		}
		if len(paths) > 20 {
			paths = append(paths[:20], "...")
		}
		fs = append(fs, Finding{Kind: KindCheckoutModified, Severity: SevHigh,
			Evidence: fmt.Sprintf("a task of %s wrote to the read-only checkout %s: %s", stage, filepath.Base(d), strings.Join(paths, ", "))})
	}
	rv.mu.Lock()
	tainted := rv.tainted
	rv.tainted = nil
	rv.mu.Unlock()
	if len(tainted) > 0 {
		fs = append(fs, Finding{Kind: KindCheckoutModified, Severity: SevHigh,
			Evidence: fmt.Sprintf("a task of %s wrote to its read-only checkout: %s", stage, strings.Join(tainted, "; "))})
	}
	if len(fs) == 0 {
		return nil, nil
	}
	stored, err := rv.addFindings(ctx, reviewSelf, fs, nil)
	var ids []string
	for _, f := range stored {
		ids = append(ids, f.ID)
	}
	return ids, err
}

// needsBase reports whether a selected analyser reads the base checkout.
func (rv *reviewRun) needsBase() bool {
	first, _ := rv.selectAnalysers()
	for _, a := range first {
		if a.Builtin != "" {
			if an, err := rv.builtin(a); err == nil {
				if nb, ok := an.(NeedsBase); ok && nb.NeedsBase() {
					return true
				}
			}
		}
	}
	return false
}
