package durable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// The lock protocol (decision: D-3). Every server process on a root takes
// the same locks, so any number of `apiary mcp` processes (and HTTP
// requests inside one) serialize exactly where a single server would:
//
//   - Lock files live in <state>/locks/ and are never deleted. A key (a
//     user path, a chunk session, a checkpoint name) maps to one of
//     lockStripes files of its class by the first byte of its SHA-256;
//     the scratch index, the retry budgets and the journal have one file
//     each.
//   - A holder takes its process's in-memory mutex for the file (so
//     goroutines queue without blocking threads), opens the file without
//     following symlinks, takes flock(LOCK_EX) on it and checks that the
//     path still names the descriptor it locked. flock belongs to the open
//     file description: the kernel releases it when the holder closes the
//     file or dies, SIGKILL included, so no lock outlives its holder.
//   - Classes are taken in one order — chunk, path, checkpoint, scratch,
//     attempts, journal — and two locks of one class (rw.move) in name
//     order, so no two holders wait on each other.
//   - Before the commit point of a journaled write the holder records the
//     journal row it is about to append in its lock file and syncs it;
//     once the row is in the journal it clears the record. Whoever takes a
//     lock and finds a record there (its writer died between the rename and
//     the journal, or the journal could not be written) checks the disk: a
//     write that landed gets its row, marked "recovered"; one that did not
//     is forgotten. Open does the same for every lock file nobody holds.
const (
	locksDir    = "locks"
	lockStripes = 256
)

// Lock classes, in the order one operation may take them.
const (
	classChunk      = "chunk"
	classPath       = "path"
	classCheckpoint = "checkpoint"
)

// Singleton lock files.
const (
	lockScratch  = "scratch.lock"
	lockAttempts = "attempts.lock"
	lockJournal  = "journal.lock"
)

// lockName returns the lock file of key in class.
func lockName(class, key string) string {
	h := sha256.Sum256([]byte(key))
	return class + "-" + hex.EncodeToString(h[:1]) + ".lock"
}

// keyedMutex serializes the goroutines of one process per lock file;
// entries are dropped when unused. Waiting honours the context.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	ch   chan struct{}
	refs int
}

// lock locks key and returns its unlock function.
func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{ch: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	drop := func() {
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	return func() { <-e.ch; drop() }, nil
}

// lockHandle is one held lock file.
type lockHandle struct {
	w       *Workspace
	name    string
	f       *os.File
	release func()
	pending [][]byte // rows recorded by earlier holders and not yet journaled
	intent  []byte   // the row this holder is committing, if any
}

// acquire takes the lock file name: the process's mutex, then flock. With
// create false a lock file that does not exist (nor its directory) is not
// created and acquire returns nil: there is nothing to protect yet. With
// wait false a lock another process holds returns nil too. Rows left
// pending in the file are resolved before acquire returns.
func (w *Workspace) acquire(ctx context.Context, name string, create, wait bool) (*lockHandle, error) {
	release, err := w.locks.lock(ctx, name)
	if err != nil {
		return nil, err
	}
	h, err := w.acquireFile(ctx, name, create, wait)
	if h == nil || err != nil {
		release()
		return nil, err
	}
	h.release = release
	if len(h.pending) > 0 {
		w.resolvePending(ctx, h)
	}
	return h, nil
}

func (w *Workspace) acquireFile(ctx context.Context, name string, create, wait bool) (*lockHandle, error) {
	disp := w.statePath(locksDir + "/" + name)
	st, err := w.stateRoot(create)
	if err != nil || st == nil {
		return nil, err
	}
	defer st.Close()
	if create {
		if err := ensureDir(st, locksDir, disp); err != nil {
			return nil, err
		}
	}
	d, err := st.Open(locksDir)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil, nil
	}
	if err != nil {
		return nil, fsError(err, disp)
	}
	defer d.Close()
	for range 100 {
		f, err := openAt(d, name, oRDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			if !create {
				return nil, nil
			}
			f, err = openAt(d, name, oRDWR|oCreate, 0o644)
			if errors.Is(err, fs.ErrExist) {
				continue // created meanwhile by another process
			}
			if err == nil {
				if err := d.Sync(); err != nil {
					f.Close()
					return nil, fsError(err, disp)
				}
			}
		}
		if err != nil {
			return nil, fsError(err, disp)
		}
		fi, err := f.Stat()
		if err == nil {
			err = checkRegular(fi, disp)
		}
		if err != nil {
			f.Close()
			return nil, fsError(err, disp)
		}
		switch err := flockCtx(ctx, f, wait); {
		case errors.Is(err, errLockBusy):
			f.Close()
			return nil, nil
		case err != nil:
			if ctx.Err() == nil {
				f.Close()
				return nil, fsError(err, disp)
			}
			return nil, err // f now belongs to the waiter
		}
		// The file may have been replaced (the state directory removed and
		// recreated) between the open and the lock: then this lock excludes
		// nobody. Look again.
		dev, ino := fileID(fi)
		if pdev, pino, err := statAt(d, name); err != nil || pdev != dev || pino != ino {
			f.Close()
			continue
		}
		h := &lockHandle{w: w, name: name, f: f}
		if err := h.load(fi.Size()); err != nil {
			f.Close()
			return nil, fsError(err, disp)
		}
		return h, nil
	}
	return nil, corruptErr(ReasonUnknown, "lock_file_unstable", map[string]any{"lock": disp})
}

// flockCtx takes the flock, waiting (when wait) until it is free or ctx
// ends. A waiter abandoned by ctx keeps waiting in its goroutine and closes
// f as soon as it gets the lock, which releases it again.
func flockCtx(ctx context.Context, f *os.File, wait bool) error {
	err := flock(f, false)
	if !errors.Is(err, errLockBusy) || !wait {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- flock(f, true) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return ctx.Err()
	}
}

// unlock releases the lock. A nil handle is a no-op.
func (h *lockHandle) unlock() {
	if h == nil {
		return
	}
	h.f.Close()
	h.release()
}

// load reads the rows recorded in the lock file.
func (h *lockHandle) load(size int64) error {
	if size == 0 {
		return nil
	}
	data, err := readAllFrom(h.f, size, 16<<20)
	if err != nil {
		return err
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			h.pending = append(h.pending, line)
		}
	}
	return nil
}

// save writes the pending rows and the intent, syncing when asked. The
// pending rows come first and are rewritten in place, so a crash during
// save never loses one.
func (h *lockHandle) save(sync bool) error {
	var buf []byte
	for _, l := range h.pending {
		buf = append(append(buf, l...), '\n')
	}
	if h.intent != nil {
		buf = append(append(buf, h.intent...), '\n')
	}
	if len(buf) > 0 {
		if _, err := h.f.WriteAt(buf, 0); err != nil {
			return err
		}
	}
	if err := h.f.Truncate(int64(len(buf))); err != nil {
		return err
	}
	if sync {
		return h.f.Sync()
	}
	return nil
}

// record notes row as about to be committed (synced before the commit
// point). A nil handle records nothing.
func (h *lockHandle) record(row []byte) error {
	if h == nil {
		return nil
	}
	h.intent = row
	return h.save(true)
}

// settle forgets the intent once it is journaled, or once the write
// failed before its commit point. Failing to rewrite the file only leaves
// a record the next holder resolves, so the error is logged.
func (h *lockHandle) settle() {
	if h == nil || h.intent == nil {
		return
	}
	h.intent = nil
	if err := h.save(false); err != nil {
		h.w.log.Warn("durable: clearing a lock record", "lock", h.name, "err", err)
	}
}

// keep leaves the intent recorded: it landed but could not be journaled.
func (h *lockHandle) keep() {
	if h == nil || h.intent == nil {
		return
	}
	h.pending = append(h.pending, h.intent)
	h.intent = nil
}

// lockAll takes several lock files of one class in name order (each once).
func (w *Workspace) lockAll(ctx context.Context, names ...string) ([]*lockHandle, error) {
	names = sortedUnique(names)
	var hs []*lockHandle
	for _, n := range names {
		h, err := w.acquire(ctx, n, true, true)
		if err != nil {
			unlockAll(hs)
			return nil, err
		}
		hs = append(hs, h)
	}
	return hs, nil
}

func unlockAll(hs []*lockHandle) {
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i].unlock()
	}
}

func sortedUnique(s []string) []string {
	out := append([]string{}, s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	k := 0
	for i, v := range out {
		if i == 0 || v != out[k-1] {
			out[k] = v
			k++
		}
	}
	return out[:k]
}

// resolvePending settles the rows earlier holders of h left: a write that
// landed gets its journal row (marked recovered) unless the journal already
// has it; one that did not land is forgotten. Rows that cannot be journaled
// now stay for the next holder.
func (w *Workspace) resolvePending(ctx context.Context, h *lockHandle) {
	var keep [][]byte
	for _, line := range h.pending {
		var row map[string]any
		if err := decodeJSON(line, &row); err != nil || row == nil {
			w.log.Warn("durable: dropping an unreadable lock record", "lock", h.name)
			continue
		}
		if !w.rowLanded(row) {
			w.log.Info("durable: a recorded write never landed; forgetting it", "lock", h.name, "path", row["path"])
			continue
		}
		row["recovered"] = true
		rec, err := MarshalASCII(row)
		appended := false
		if err == nil {
			id, _ := row["journal_id"].(string)
			appended, err = w.appendJournalRow(context.WithoutCancel(ctx), rec, id)
		}
		if err != nil {
			w.log.Warn("durable: cannot journal a recovered write yet", "lock", h.name, "path", row["path"], "err", err)
			keep = append(keep, line)
			continue
		}
		if appended {
			w.recovered.Add(1)
			w.log.Info("durable: journaled a write whose writer stopped before its journal row", "path", row["path"], "journal_id", row["journal_id"])
		}
	}
	h.pending = keep
	if err := h.save(false); err != nil {
		w.log.Warn("durable: rewriting a lock record", "lock", h.name, "err", err)
	}
}

// rowLanded reports whether the write a journal row describes is on disk:
// the file has the row's hash; for a move, the destination exists (with
// the hash, for files) and the source does not.
func (w *Workspace) rowLanded(row map[string]any) bool {
	p, _ := row["path"].(string)
	sha, _ := row["sha256"].(string)
	if p == "" {
		return false
	}
	if row["mode"] == "move" {
		from, _ := row["from"].(string)
		if from == "" || w.displayExists(from) || !w.displayExists(p) {
			return false
		}
		if sha == "" {
			return true
		}
	}
	data, err := w.readDisplay(p)
	return err == nil && sha256Hex(data) == sha
}

// recordLine renders a journal row for a lock record.
func recordLine(row map[string]any) ([]byte, error) {
	line, err := MarshalASCII(row)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return nil, fmt.Errorf("durable: journal row with a newline")
	}
	return line, nil
}
