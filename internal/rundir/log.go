package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Log is the writer of one run's directory: it appends to the event log
// and holds the run's lock. Its methods are safe for concurrent use.
type Log struct {
	Run
	now func() time.Time
	on  func(Event)

	mu     sync.Mutex // guards events and seq, and serializes on
	events *os.File
	seq    int64
	lockf  *os.File // the run's lock, held until Close
}

// NewLog returns the writer of run id at root. now stamps events; on, if
// set, sees every event after it is on disk, one at a time.
func NewLog(root, id string, now func() time.Time, on func(Event)) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{Run: Open(root, id), now: now, on: on}
}

// Emit appends ev to events.jsonl (one line) and then hands it to the
// hook. Seq, Run and (when zero) Time are filled in.
func (l *Log) Emit(ev Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.events == nil {
		if err := os.MkdirAll(l.Dir(), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(l.EventsPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		l.events = f
	}
	l.seq++
	ev.Seq = l.seq
	ev.Run = l.id
	if ev.Time.IsZero() {
		ev.Time = l.now().UTC()
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	// One write per line with O_APPEND: a process crash leaves whole lines
	// (at worst a torn last one, which readers skip). The file is fsynced
	// by Close; receipts and run.json are fsynced as they are written.
	if _, err := l.events.Write(append(b, '\n')); err != nil {
		return err
	}
	if l.on != nil {
		l.on(ev)
	}
	return nil
}

// SetSeq continues the sequence of an existing event log.
func (l *Log) SetSeq(n int64) {
	l.mu.Lock()
	l.seq = n
	l.mu.Unlock()
}

// Lock takes the run's lock, an flock on RUN/lock held until Close: one
// process at a time executes a run, and a reader can tell a live run from
// one whose process died (Run.Active). ErrRunning when another process
// holds it.
func (l *Log) Lock() error {
	if err := os.MkdirAll(l.Dir(), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(l.Dir(), "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := flockSettled(f, lockExclusive); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return fmt.Errorf("%w: %s", ErrRunning, l.id)
		}
		return err
	}
	l.mu.Lock()
	l.lockf = f
	l.mu.Unlock()
	return nil
}

// Close fsyncs and closes the event log and releases the run's lock.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lockf != nil {
		defer func() {
			l.lockf.Close() // releases the flock
			l.lockf = nil
		}()
	}
	if l.events == nil {
		return nil
	}
	err := l.events.Sync()
	if cerr := l.events.Close(); err == nil {
		err = cerr
	}
	l.events = nil
	return err
}
