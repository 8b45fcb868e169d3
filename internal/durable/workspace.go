package durable

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Default values of Config fields.
const (
	DefaultStateDir = ".apiary/durable"
	CompatStateDir  = ".resilient_write"
	DefaultCaller   = "apiary-durable"
	CompatCaller    = "resilient-write"
)

// Open's errors.
var (
	ErrNoRoot      = errors.New("durable: no root directory configured")
	ErrUnsafeRoot  = errors.New("durable: refusing a system directory as workspace root")
	ErrRootName    = errors.New("durable: extra roots need distinct base names")
	ErrBadStateDir = errors.New("durable: state directory must be a relative path inside the workspace")
)

// unsafeRoots are directories Resilient Write refuses as a workspace: a
// workspace there almost always means an unexpanded $RW_WORKSPACE.
var unsafeRoots = map[string]bool{"/": true, "/bin": true, "/sbin": true, "/usr": true, "/etc": true, "/var": true, "/tmp": true}

// Config configures a Workspace. The zero value of every field but Roots is
// a sensible default. The cli package fills it from flags and the environment
// (RW_WORKSPACE, RW_POLICY_FILE, RW_SCRATCH_DISABLE_GET); durable never reads
// the environment itself.
type Config struct {
	// Roots are the directories the tools may touch. Roots[0] is the
	// workspace: bare relative paths and all server state live there. The
	// others are addressed as "@<base name>/<path>".
	Roots []string
	// StateDir is the workspace-relative directory of the server's own state
	// (journal, chunks, scratch, checkpoints, policy). Default
	// DefaultStateDir; CompatStateDir reproduces Resilient Write's paths.
	StateDir string
	// PolicyFile overrides <StateDir>/policy.yaml (RW_POLICY_FILE): absolute,
	// or relative to the workspace (then read through the root).
	PolicyFile string
	// ScratchGetDisabled refuses rw.scratch_get (RW_SCRATCH_DISABLE_GET).
	ScratchGetDisabled bool
	// Authority is consulted before every tool call and every user path a
	// tool writes; nil allows everything.
	Authority Authority
	// Caller is the journal's "caller" field. Default DefaultCaller.
	Caller string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Rand supplies randomness for temp names and journal ids. Default
	// crypto/rand. It is used under a lock.
	Rand io.Reader
	// Logger receives startup and recovery notes. Default: discard.
	Logger *slog.Logger
	// Python checks Python syntax for rw.validate; nil reports "unsupported".
	Python PythonChecker
	// SweepAge is how old a temp file of a live process must be before the
	// startup sweep removes it anyway. Default 10 minutes. Temp files of
	// dead processes are always removed.
	SweepAge time.Duration
}

// root is one confinement root.
type root struct {
	name string   // "" for the workspace, else the base name used after "@"
	dir  string   // absolute, symlinks resolved
	r    *os.Root // all I/O goes through it
}

// Workspace is the write surface over one or more roots. It is safe for
// concurrent use, and any number of Workspaces — in this process or others —
// may serve the same roots at once: writers to one path (and to one chunk
// session, the scratch index, one checkpoint, the journal) are serialized
// across all of them by the lock protocol (lock.go); everything else runs
// in parallel. Close releases the roots.
type Workspace struct {
	cfg     Config
	roots   []*root
	state   string // cleaned StateDir
	now     func() time.Time
	log     *slog.Logger
	randMu  sync.Mutex
	locks   keyedMutex // this process's side of the lock protocol (lock.go)
	pid     int
	startup StartupReport
	// recovered counts writes journaled by recovery (lock records).
	recovered atomic.Int64
	// basePolicy is the compiled default policy; overrides are merged
	// into a copy per call.
	basePolicy *policy
}

// Open validates cfg, opens the roots, sweeps orphan temp files and
// reconciles the journal (see StartupReport).
func Open(ctx context.Context, cfg Config) (*Workspace, error) {
	if errPlatform != nil {
		return nil, errPlatform
	}
	if len(cfg.Roots) == 0 {
		return nil, ErrNoRoot
	}
	w := &Workspace{cfg: cfg, now: cfg.Now, log: cfg.Logger, pid: os.Getpid(), basePolicy: defaultPolicy()}
	if w.now == nil {
		w.now = time.Now
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.cfg.Rand == nil {
		w.cfg.Rand = rand.Reader
	}
	if w.cfg.Caller == "" {
		w.cfg.Caller = DefaultCaller
	}
	if w.cfg.SweepAge == 0 {
		w.cfg.SweepAge = 10 * time.Minute
	}
	st := cfg.StateDir
	if st == "" {
		st = DefaultStateDir
	}
	st = path.Clean(filepath.ToSlash(st))
	if path.IsAbs(st) || st == "." || st == ".." || strings.HasPrefix(st, "../") {
		return nil, fmt.Errorf("%w: %q", ErrBadStateDir, cfg.StateDir)
	}
	w.state = st
	seen := map[string]bool{}
	for i, dir := range cfg.Roots {
		abs, err := filepath.Abs(dir)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("durable: root %q: %w", dir, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("durable: root %q: %w", dir, err)
		}
		if unsafeRoots[real] {
			w.Close()
			return nil, fmt.Errorf("%w: %s (set --root or $RW_WORKSPACE to a project directory)", ErrUnsafeRoot, real)
		}
		r, err := os.OpenRoot(real)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("durable: root %q: %w", dir, err)
		}
		name := ""
		if i > 0 {
			name = filepath.Base(real)
			if seen[name] || !validRootName(name) {
				r.Close()
				w.Close()
				return nil, fmt.Errorf("%w: %q", ErrRootName, name)
			}
			seen[name] = true
		}
		w.roots = append(w.roots, &root{name: name, dir: real, r: r})
	}
	w.startup = w.recover(ctx)
	return w, nil
}

// validRootName reports whether an extra root's base name can be written
// after "@" without ambiguity.
func validRootName(n string) bool {
	if n == "" || n == "." || n == ".." || n == "/" {
		return false
	}
	return !strings.ContainsAny(n, "/@\x00")
}

// Close releases the roots. It does not wait for calls in flight; the caller
// stops calling first.
func (w *Workspace) Close() error {
	var errs []error
	for _, r := range w.roots {
		errs = append(errs, r.r.Close())
	}
	w.roots = nil
	return errors.Join(errs...)
}

// Dir returns the workspace directory (the first root, symlinks resolved).
func (w *Workspace) Dir() string { return w.roots[0].dir }

// StateDir returns the workspace-relative state directory.
func (w *Workspace) StateDir() string { return w.state }

// Startup returns what Open found and repaired.
func (w *Workspace) Startup() StartupReport { return w.startup }

// ws returns the workspace root.
func (w *Workspace) ws() *root { return w.roots[0] }

// randHex returns n random bytes as hex.
func (w *Workspace) randHex(n int) string {
	b := make([]byte, n)
	w.randMu.Lock()
	_, err := io.ReadFull(w.cfg.Rand, b)
	w.randMu.Unlock()
	if err != nil {
		// A broken random source must not stop writes: fall back to the
		// clock, which keeps temp names unique enough with O_EXCL.
		t := uint64(w.now().UnixNano())
		for i := range b {
			b[i] = byte(t >> (8 * (i % 8)))
		}
	}
	return hex.EncodeToString(b)
}

// nowUTC returns the clock in UTC.
func (w *Workspace) nowUTC() time.Time { return w.now().UTC() }

// isoSeconds formats t as Resilient Write's timestamps: %Y-%m-%dT%H:%M:%SZ.
func isoSeconds(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// stateExists reports whether the state directory exists.
func (w *Workspace) stateExists() bool {
	_, err := w.ws().r.Lstat(w.state)
	return err == nil
}
