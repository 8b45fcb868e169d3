// Package git runs the git plumbing apiary needs — worktrees at pinned
// commits, commits with trailers, diffs, in-memory merges with
// `merge-tree --write-tree`, commit-tree and compare-and-swap ref updates —
// by executing the git binary.
//
// Every invocation runs in its own process group (killed as a group when its
// context ends), with user hooks disabled (-c core.hooksPath=/dev/null),
// commit signing off, no editor, no pager, no terminal prompt
// (GIT_TERMINAL_PROMPT=0) and LC_ALL=C, and without inherited GIT_DIR-style
// variables that would redirect it to another repository. A failed command
// is an *Error carrying its arguments, exit code and stderr.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrRefMoved: a compare-and-swap ref update found the ref at another
	// value than expected. The error is a *RefMovedError.
	ErrRefMoved = errors.New("git: ref moved")
	// ErrNotFound: a revision, ref, object or path does not exist.
	ErrNotFound = errors.New("git: not found")
	// ErrDetached: HEAD is not on a branch.
	ErrDetached = errors.New("git: HEAD is detached")
	// ErrNothingToCommit: CommitAll found no change and AllowEmpty was false.
	ErrNothingToCommit = errors.New("git: nothing to commit")
	// ErrExists: a branch or worktree path to be created already exists.
	ErrExists = errors.New("git: already exists")
	// ErrBadArgument: an argument was rejected before running git (a
	// revision starting with "-", a malformed trailer, ...).
	ErrBadArgument = errors.New("git: bad argument")
	// ErrUnsupported: the installed git lacks a needed feature.
	ErrUnsupported = errors.New("git: unsupported by this git version")
)

// Error is a git command that failed.
type Error struct {
	Args     []string // arguments after the global options
	ExitCode int      // -1 when git did not exit normally
	Stderr   string   // trimmed, at most 4 KiB
	Err      error    // the underlying cause (an *exec.ExitError, a context error, ...)
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("git %s: exit %d", strings.Join(e.Args, " "), e.ExitCode)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// RefMovedError is the failure of a compare-and-swap: Ref was at Actual
// ("" when absent), not Expected.
type RefMovedError struct {
	Ref, Expected, Actual string
}

func (e *RefMovedError) Error() string {
	return fmt.Sprintf("git: ref %s moved: expected %s, found %s", e.Ref, orNone(e.Expected), orNone(e.Actual))
}

func (e *RefMovedError) Is(target error) bool { return target == ErrRefMoved }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Repo runs git in one repository or worktree directory. Create it with New;
// it is safe for concurrent use (git itself serializes ref and index
// updates with lock files).
type Repo struct {
	dir string
	opt Options

	versionOnce sync.Once
	version     [3]int
	versionErr  error
}

// Options configure a Repo. The zero value runs "git" from PATH in the
// process's environment.
type Options struct {
	// Git is the git executable; default "git".
	Git string
	// Env is the base environment of git processes; nil means the current
	// process's. Apiary's fixed settings are added to it.
	Env []string
	// WaitDelay bounds how long to wait for output after git exits or is
	// killed (a grandchild holding a pipe); default 5 s.
	WaitDelay time.Duration
}

// New returns a Repo for dir, which should be a repository's working tree
// (or a linked worktree). Nothing is checked until a command runs.
func New(dir string, opt Options) *Repo {
	if opt.Git == "" {
		opt.Git = "git"
	}
	if opt.WaitDelay == 0 {
		opt.WaitDelay = 5 * time.Second
	}
	return &Repo{dir: dir, opt: opt}
}

// Dir returns the directory the Repo runs in.
func (r *Repo) Dir() string { return r.dir }

// At returns a Repo with the same options for another directory, typically
// a worktree of this repository.
func (r *Repo) At(dir string) *Repo { return New(dir, r.opt) }

// getenv returns a variable of the environment git runs with.
func (r *Repo) getenv(key string) string {
	if r.opt.Env == nil {
		return os.Getenv(key)
	}
	for i := len(r.opt.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(r.opt.Env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// globalArgs come before every subcommand.
func globalArgs() []string {
	return []string{
		"-c", "core.hooksPath=/dev/null",
		"-c", "commit.gpgSign=false",
		"-c", "tag.gpgSign=false",
		"-c", "core.quotePath=false",
		"-c", "log.showSignature=false",
		"-c", "core.editor=true",
		"-c", "color.ui=false",
	}
}

// stripped reports whether an inherited variable must not reach git: it
// would point git at another repository or override apiary's settings.
func stripped(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	switch k {
	case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
		"GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER",
		"GIT_TERMINAL_PROMPT", "LC_ALL", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT":
		return true
	}
	return false
}

// call is one git invocation.
type call struct {
	args   []string
	stdin  []byte
	env    []string // added after the fixed settings
	okExit []int    // exit codes other than 0 that are not errors
}

// command prepares git with args in r.dir: apiary's global options and
// environment, its own process group, and the Repo's WaitDelay.
func (r *Repo) command(ctx context.Context, args []string, extraEnv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.opt.Git, append(globalArgs(), args...)...)
	cmd.Dir = r.dir
	base := r.opt.Env
	if base == nil {
		base = cmd.Environ()
	}
	env := make([]string, 0, len(base)+8+len(extraEnv))
	for _, kv := range base {
		if !stripped(kv) {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", "GIT_PAGER=cat", "LC_ALL=C", "GIT_ASKPASS=true", "SSH_ASKPASS=true")
	cmd.Env = append(env, extraEnv...)
	setProcessGroup(cmd)
	cmd.WaitDelay = r.opt.WaitDelay
	return cmd
}

// run executes c in r.dir and returns stdout and the exit code.
func (r *Repo) run(ctx context.Context, c call) ([]byte, int, error) {
	cmd := r.command(ctx, c.args, c.env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	err := cmd.Run()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if err == nil {
		return stdout.Bytes(), 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		for _, ok := range c.okExit {
			if code == ok {
				return stdout.Bytes(), code, nil
			}
		}
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	msg := strings.TrimSpace(stderr.String())
	if len(msg) > 4096 {
		msg = msg[:4096] + "…"
	}
	return stdout.Bytes(), code, &Error{Args: c.args, ExitCode: code, Stderr: msg, Err: err}
}

// out runs git with args and returns its trimmed stdout.
func (r *Repo) out(ctx context.Context, args ...string) (string, error) {
	b, _, err := r.run(ctx, call{args: args})
	return strings.TrimSpace(string(b)), err
}

// Version returns the installed git's version (major, minor, patch).
func (r *Repo) Version(ctx context.Context) ([3]int, error) {
	r.versionOnce.Do(func() {
		s, err := r.out(ctx, "version")
		if err != nil {
			r.versionErr = err
			return
		}
		// "git version 2.39.5" (possibly with a vendor suffix).
		f := strings.Fields(s)
		if len(f) < 3 {
			r.versionErr = fmt.Errorf("git: cannot parse %q", s)
			return
		}
		for i, p := range strings.SplitN(f[2], ".", 3) {
			n := 0
			for _, c := range p {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int(c-'0')
			}
			r.version[i] = n
		}
	})
	return r.version, r.versionErr
}

// atLeast reports whether git is at least major.minor.
func (r *Repo) atLeast(ctx context.Context, major, minor int) (bool, error) {
	v, err := r.Version(ctx)
	if err != nil {
		return false, err
	}
	return v[0] > major || v[0] == major && v[1] >= minor, nil
}

// checkRev rejects revisions git would parse as options.
func checkRev(revs ...string) error {
	for _, r := range revs {
		if r == "" || strings.HasPrefix(r, "-") || strings.ContainsAny(r, "\x00\n") {
			return fmt.Errorf("%w: revision %q", ErrBadArgument, r)
		}
	}
	return nil
}
