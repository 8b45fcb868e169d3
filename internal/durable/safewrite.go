package durable

import (
	"context"
	"errors"
	"io/fs"
	"slices"
)

// Write modes of rw.safe_write.
const (
	ModeCreate    = "create"
	ModeOverwrite = "overwrite"
	ModeAppend    = "append"
)

var validModes = []string{ModeCreate, ModeOverwrite, ModeAppend}

var verdictRank = map[string]int{"safe": 0, "low": 1, "medium": 2, "high": 3}

// SafeWriteParams are rw.safe_write's arguments.
type SafeWriteParams struct {
	Path    string
	Content string
	// Mode is create (default: never replaces a file, even one created
	// concurrently), overwrite, or append (the whole file is rewritten
	// atomically with the content added).
	Mode string
	// ExpectedPrevSHA256 guards against lost updates: the current file must
	// have this hash ("" means the file must not exist).
	ExpectedPrevSHA256 *string
	// Classify runs the risk classifier first and refuses with
	// blocked/content_filter at or above ClassifyRejectAt (default high).
	Classify         bool
	ClassifyRejectAt string
}

// SafeWrite writes one file transactionally (see writeAtomic) and journals
// it. Checks run in Resilient Write's order: mode, classifier (before the
// path, so a bad path with risky content is "blocked"), path, create over an
// existing file, expected_prev_sha256, read-back, OS errors. A classifier
// refusal carries a retry budget that counts down per identical attempt and
// ends in quota_exceeded.
func (w *Workspace) SafeWrite(ctx context.Context, p SafeWriteParams) (Result, error) {
	const tool = "rw.safe_write"
	if err := w.allow(tool, ""); err != nil {
		return nil, err
	}
	mode := p.Mode
	if mode == "" {
		mode = ModeCreate
	}
	if !slices.Contains(validModes, mode) {
		return nil, newErr(KindPolicyViolation, ReasonUnknown, ActionAbort, map[string]any{"mode": mode, "valid_modes": validModes})
	}
	if p.Classify {
		if err := w.classifyGate(tool, p.Path, p.Content, p.ClassifyRejectAt); err != nil {
			return nil, err
		}
	}
	t, err := w.resolve(p.Path)
	if err != nil {
		return nil, err
	}
	if err := w.allow(tool, t.disp); err != nil {
		return nil, err
	}
	h, err := w.lockPath(ctx, t)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	var old []byte
	exists := false
	if mode != ModeOverwrite || p.ExpectedPrevSHA256 != nil {
		// Only append, create (for the error) and the hash guard need the
		// current bytes; a plain overwrite does not read them.
		if old, exists, err = w.readExisting(t); err != nil {
			return nil, err
		}
	} else if exists, err = w.statExisting(t); err != nil {
		return nil, err
	}
	if mode == ModeCreate && exists {
		return nil, staleErr(ActionAskUser, "file_already_exists", map[string]any{"path": p.Path, "existing_sha256": sha256Hex(old)})
	}
	if p.ExpectedPrevSHA256 != nil {
		cur := ""
		if exists {
			cur = sha256Hex(old)
		}
		if cur != *p.ExpectedPrevSHA256 {
			return nil, staleErr(ActionAskUser, "", map[string]any{"path": p.Path, "expected_prev_sha256": *p.ExpectedPrevSHA256, "actual_prev_sha256": cur})
		}
	}
	data := []byte(p.Content)
	if mode == ModeAppend && exists {
		data = append(old, data...)
	}
	wr, err := w.writeUserLocked(ctx, h, t, data, mode, mode == ModeCreate)
	if err != nil {
		return nil, err
	}
	w.budgetReset(ctx, tool, p.Path)
	return wr.j.annotate(Result{
		"ok": true, "path": wr.disp, "sha256": wr.sha, "bytes": wr.size,
		"mode_applied": mode, "journal_id": wr.j.id, "wrote_at": wr.j.ts,
	}), nil
}

// classifyGate scores content and refuses at or above rejectAt, counting
// the refusal against the (tool, path, content) retry budget.
func (w *Workspace) classifyGate(tool, p, content, rejectAt string) error {
	if rejectAt == "" {
		rejectAt = "high"
	}
	threshold, ok := verdictRank[rejectAt]
	if !ok || rejectAt == "safe" {
		threshold = verdictRank["high"]
	}
	pol, err := w.loadPolicy(w.basePolicy)
	if err != nil {
		return err
	}
	key := budgetKey(tool, p, sha256Hex([]byte(content)))
	if e := w.budgetExhausted(key, pol.retryBudget, p); e != nil {
		return e
	}
	rep := scoreContent(content, pol)
	if verdictRank[rep.verdict] < threshold {
		return nil
	}
	e := newErr(KindBlocked, ReasonContentFilter, ActionRedact, map[string]any{
		"path": p, "score": scoreFloat(rep.score), "verdict": rep.verdict, "classify_reject_at": rejectAt,
		"detected": rep.detected, "suggested_actions": rep.actions,
	})
	e.Patterns = append([]string{}, rep.families...)
	e.RetryBudget = w.budgetFail(context.Background(), key, pol.retryBudget, e)
	return e
}

// lockKey identifies t for per-path serialization.
func (t target) lockKey() string { return "path\x00" + t.root.name + "\x00" + t.rel }

// lockPath takes t's path lock.
func (w *Workspace) lockPath(ctx context.Context, t target) (*lockHandle, error) {
	return w.acquire(ctx, lockName(classPath, t.lockKey()), true, true)
}

// statExisting reports whether t exists, refusing targets that are not
// regular files or have other hard links.
func (w *Workspace) statExisting(t target) (bool, error) {
	fi, err := t.root.r.Lstat(t.rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fsError(err, t.raw)
	}
	return true, checkRegular(fi, t.raw)
}

// readExisting returns the current content of t and whether it exists,
// read through openChecked: targets that are not regular files or have
// other hard links are refused, on the descriptor that is read.
func (w *Workspace) readExisting(t target) ([]byte, bool, error) {
	data, _, err := readChecked(t.root.r, t.rel, t.raw, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fsError(err, t.raw)
	}
	return data, true, nil
}

// writeResult describes a committed user write.
type writeResult struct {
	disp, sha string
	size      int
	j         journaled
}

// writeUserLocked writes data to t atomically and journals it with mode;
// the caller holds t's lock h. create refuses to replace any file.
func (w *Workspace) writeUserLocked(ctx context.Context, h *lockHandle, t target, data []byte, mode string, create bool) (writeResult, error) {
	sha := sha256Hex(data)
	row := w.newRow(t.disp, sha, int64(len(data)), mode, nil)
	j, err := w.commit(ctx, h, t.root.r, t.rel, data, writeOpts{noClobber: create, refuseHardLinks: true, disp: t.raw, sha: sha}, row)
	if errors.Is(err, errExists) {
		cur, _, rerr := w.readExisting(t)
		if rerr != nil {
			return writeResult{}, rerr
		}
		return writeResult{}, staleErr(ActionAskUser, "file_already_exists", map[string]any{"path": t.raw, "existing_sha256": sha256Hex(cur)})
	}
	if err != nil {
		return writeResult{}, err
	}
	return writeResult{disp: t.disp, sha: sha, size: len(data), j: j}, nil
}
