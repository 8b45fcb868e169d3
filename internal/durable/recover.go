package durable

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// Bounds of the startup work.
const (
	sweepMaxEntries   = 1_000_000
	reconcileMaxPaths = 1000
	reconcileMaxBytes = 64 << 20
)

// StartupReport is what Open found and repaired.
type StartupReport struct {
	// SweptTemps are orphan temp files removed (display paths): left by
	// a process that died mid-write, or older than SweepAge.
	SweptTemps []string
	// TornJournalBytes is the size of an unterminated, unparsable last
	// journal line that was cut off (a crash during an append).
	TornJournalBytes int
	// Recovered is the number of writes that had landed without their
	// journal row (the writer died between its rename and its journal
	// append, or the journal could not be written) and were journaled now,
	// marked "recovered": true.
	Recovered int
	// JournalRows is the number of journal rows.
	JournalRows int
	// Drifted lists journaled paths whose latest row's hash no longer
	// matches the file (changed outside the tools, or deleted). They are
	// reported, never "repaired".
	Drifted []string
}

// recover sweeps orphan temp files, repairs the journal's tail, journals
// writes that landed without their row, and reconciles the journal with the
// disk. Failures are logged: a damaged workspace must still be servable. It
// creates nothing: a workspace without state stays without.
func (w *Workspace) recover(ctx context.Context) StartupReport {
	var rep StartupReport
	for _, r := range w.roots {
		rep.SweptTemps = append(rep.SweptTemps, w.sweep(ctx, r)...)
	}
	rep.TornJournalBytes = w.repairJournalTail(ctx)
	before := w.recovered.Load()
	w.resolveAllPending(ctx)
	rep.Recovered = int(w.recovered.Load() - before)
	rows, err := w.readJournal()
	if err != nil {
		w.log.Warn("durable: journal unreadable at startup", "err", err)
		return rep
	}
	rep.JournalRows = len(rows)
	rep.Drifted = w.reconcile(ctx, rows)
	if len(rep.SweptTemps) > 0 || rep.TornJournalBytes > 0 || rep.Recovered > 0 || len(rep.Drifted) > 0 {
		w.log.Info("durable: startup recovery", "swept_temps", len(rep.SweptTemps), "torn_journal_bytes", rep.TornJournalBytes,
			"recovered_writes", rep.Recovered, "drifted_paths", len(rep.Drifted))
	}
	return rep
}

// sweep removes temp files of dead processes (and stale ones of live
// processes) anywhere under r, skipping .git.
func (w *Workspace) sweep(ctx context.Context, r *root) []string {
	var swept []string
	n := 0
	fs.WalkDir(r.r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		n++
		if n > sweepMaxEntries || ctx.Err() != nil {
			return fs.SkipAll
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		m := tmpPattern.FindStringSubmatch(d.Name())
		if m == nil || !d.Type().IsRegular() {
			return nil
		}
		pid, _ := strconv.Atoi(m[1])
		stale := false
		if info, err := d.Info(); err == nil {
			stale = w.now().Sub(info.ModTime()) > w.cfg.SweepAge
		}
		if processAlive(pid) && !stale {
			return nil
		}
		if err := r.r.Remove(p); err == nil {
			dir := path.Dir(p)
			if err := syncDir(r.r, dir); err != nil {
				w.log.Warn("durable: fsync after sweep", "dir", dir, "err", err)
			}
			disp := p
			if r.name != "" {
				disp = "@" + r.name + "/" + p
			}
			swept = append(swept, disp)
		}
		return nil
	})
	return swept
}

// repairJournalTail cuts an unterminated last journal line that is not
// valid JSON (a torn append), or terminates one that is, under the journal
// lock. It returns the number of bytes cut.
func (w *Workspace) repairJournalTail(ctx context.Context) int {
	h, err := w.acquire(ctx, lockJournal, w.stateExists(), true)
	if err != nil || h == nil {
		return 0
	}
	defer h.unlock()
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return 0
	}
	defer st.Close()
	f, _, err := openStateFile(st, journalFile, oRDWR|oAppend, false)
	if err != nil {
		return 0
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return 0
	}
	prefix, err := w.terminateJournal(f)
	if err == nil && len(prefix) > 0 {
		_, err = f.Write(prefix)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		w.log.Warn("durable: repairing the journal", "err", err)
		return 0
	}
	after, err := f.Stat()
	if err != nil || after.Size() >= before.Size() {
		return 0
	}
	return int(before.Size() - after.Size())
}

// resolveAllPending settles the records of every lock file nobody holds
// (acquire resolves them); a lock someone holds is theirs to settle.
func (w *Workspace) resolveAllPending(ctx context.Context) {
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return
	}
	ents, _, err := listDir(st, locksDir)
	st.Close()
	if err != nil {
		return
	}
	for _, e := range ents {
		if ctx.Err() != nil {
			return
		}
		if !strings.HasSuffix(e.Name(), ".lock") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err != nil || info.Size() == 0 {
			continue
		}
		h, err := w.acquire(ctx, e.Name(), false, false)
		if err != nil {
			w.log.Warn("durable: reading a lock record", "lock", e.Name(), "err", err)
		}
		h.unlock()
	}
}

// reconcile compares the latest journal row of recently written paths with
// the files on disk.
func (w *Workspace) reconcile(ctx context.Context, rows []map[string]any) []string {
	latest := map[string]string{}
	var order []string
	for i := len(rows) - 1; i >= 0 && len(order) < reconcileMaxPaths; i-- {
		p, _ := rows[i]["path"].(string)
		sha, _ := rows[i]["sha256"].(string)
		mode, _ := rows[i]["mode"].(string)
		if p == "" || sha == "" || mode == "move" {
			continue
		}
		if _, seen := latest[p]; seen {
			continue
		}
		latest[p] = sha
		order = append(order, p)
	}
	var drifted []string
	for i := len(order) - 1; i >= 0 && ctx.Err() == nil; i-- {
		p := order[i]
		data, err := w.readDisplay(p)
		if errors.Is(err, errTooLarge) {
			continue
		}
		if err != nil || sha256Hex(data) != latest[p] {
			drifted = append(drifted, p)
		}
	}
	return drifted
}

// displayTarget maps a journaled display path (workspace-relative, state
// paths included, or "@root/…" when there are several roots) to its root.
func (w *Workspace) displayTarget(p string) (*os.Root, string, bool) {
	r := w.ws()
	rel := p
	if strings.HasPrefix(p, "@") && len(w.roots) > 1 {
		name, rest, _ := strings.Cut(p[1:], "/")
		r = nil
		for _, c := range w.roots[1:] {
			if c.name == name {
				r = c
			}
		}
		if r == nil {
			return nil, "", false
		}
		rel = rest
	}
	rel = path.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return nil, "", false
	}
	return r.r, rel, true
}

// readDisplay reads a journaled display path through its root with the
// checks of every read, up to reconcileMaxBytes.
func (w *Workspace) readDisplay(p string) ([]byte, error) {
	r, rel, ok := w.displayTarget(p)
	if !ok {
		return nil, fs.ErrNotExist
	}
	data, _, err := readChecked(r, rel, p, reconcileMaxBytes)
	return data, err
}

// displayExists reports whether a journaled display path names anything.
func (w *Workspace) displayExists(p string) bool {
	r, rel, ok := w.displayTarget(p)
	if !ok {
		return false
	}
	_, err := r.Lstat(rel)
	return err == nil
}
