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

// errTooLarge marks a file reconcile does not hash.
var errTooLarge = errors.New("durable: too large to reconcile")

// StartupReport is what Open found and repaired.
type StartupReport struct {
	// SweptTemps are orphan temp files removed (display paths): left by
	// a process that died mid-write, or older than SweepAge.
	SweptTemps []string
	// TornJournalBytes is the size of an unterminated, unparsable last
	// journal line that was cut off (a crash during an append).
	TornJournalBytes int
	// JournalRows is the number of journal rows.
	JournalRows int
	// Drifted lists journaled paths whose latest row's hash no longer
	// matches the file (changed outside the tools, or deleted). They are
	// reported, never "repaired".
	Drifted []string
}

// recover sweeps orphan temp files and reconciles the journal. Failures are
// logged: a damaged workspace must still be servable.
func (w *Workspace) recover(ctx context.Context) StartupReport {
	var rep StartupReport
	for _, r := range w.roots {
		rep.SweptTemps = append(rep.SweptTemps, w.sweep(ctx, r)...)
	}
	rep.TornJournalBytes = w.repairJournalTail()
	rows, err := w.readJournal()
	if err != nil {
		w.log.Warn("durable: journal unreadable at startup", "err", err)
		return rep
	}
	rep.JournalRows = len(rows)
	rep.Drifted = w.reconcile(ctx, rows)
	if len(rep.SweptTemps) > 0 || rep.TornJournalBytes > 0 || len(rep.Drifted) > 0 {
		w.log.Info("durable: startup recovery", "swept_temps", len(rep.SweptTemps), "torn_journal_bytes", rep.TornJournalBytes, "drifted_paths", len(rep.Drifted))
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
// valid JSON (a torn append), or terminates one that is. It returns the
// number of bytes cut.
func (w *Workspace) repairJournalTail() int {
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return 0
	}
	defer st.Close()
	w.journal.Lock()
	defer w.journal.Unlock()
	f, err := st.OpenFile(journalFile, os.O_RDWR|os.O_APPEND, 0)
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

// readDisplay reads a journaled display path (workspace-relative or
// "@root/…") through its root, up to reconcileMaxBytes.
func (w *Workspace) readDisplay(p string) ([]byte, error) {
	r := w.ws()
	rel := p
	if strings.HasPrefix(p, "@") {
		name, rest, _ := strings.Cut(p[1:], "/")
		r = nil
		for _, c := range w.roots[1:] {
			if c.name == name {
				r = c
			}
		}
		if r == nil {
			return nil, fs.ErrNotExist
		}
		rel = rest
	}
	fi, err := r.r.Stat(rel)
	if err != nil {
		return nil, err
	}
	if fi.Size() > reconcileMaxBytes {
		return nil, errTooLarge
	}
	return r.r.ReadFile(rel)
}
