package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// refUpdater creates and deletes refs through one long-lived `git
// update-ref --stdin`, one transaction per request, so a pooled checkout on
// a new branch pays no process start. git itself checks the ref's name and
// that it does not exist, under the ref's lock. A failed transaction ends
// the process (git dies on it); the next request starts another. It is safe
// for concurrent use.
type refUpdater struct {
	repo *Repo

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
	stop   context.CancelFunc
	closed bool
}

func newRefUpdater(repo *Repo) *refUpdater { return &refUpdater{repo: repo} }

func (u *refUpdater) start() error {
	pctx, stop := context.WithCancel(context.Background())
	cmd := u.repo.command(pctx, []string{"update-ref", "--stdin"}, nil)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		stop()
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stop()
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		stop()
		return fmt.Errorf("git update-ref --stdin: %w", err)
	}
	u.cmd, u.stdin, u.stdout, u.stderr, u.stop = cmd, stdin, bufio.NewReader(stdout), &stderr, stop
	return nil
}

func (u *refUpdater) kill() {
	if u.cmd == nil {
		return
	}
	u.stop()
	_ = u.stdin.Close()
	_ = u.cmd.Wait()
	u.cmd = nil
}

func (u *refUpdater) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.kill()
	u.closed = true
}

// create makes ref point at oid; ErrExists if it exists already (or a ref
// in its way does), ErrBadArgument if git rejects the name.
func (u *refUpdater) create(ctx context.Context, ref, oid string) error {
	return u.transact(ctx, "create "+ref+" "+oid)
}

// remove deletes ref if it still points at old.
func (u *refUpdater) remove(ctx context.Context, ref, old string) error {
	return u.transact(ctx, "delete "+ref+" "+old)
}

func (u *refUpdater) transact(ctx context.Context, cmd string) error {
	if strings.ContainsAny(cmd, "\n\x00") {
		return fmt.Errorf("%w: %q", ErrBadArgument, cmd)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return errors.New("git: ref updater closed")
	}
	if u.cmd == nil {
		if err := u.start(); err != nil {
			return err
		}
	}
	stopWatch := context.AfterFunc(ctx, u.stop)
	defer stopWatch()
	if _, err := io.WriteString(u.stdin, "start\n"+cmd+"\nprepare\ncommit\n"); err != nil {
		return u.fail(ctx, err)
	}
	for _, want := range []string{"start: ok\n", "prepare: ok\n", "commit: ok\n"} {
		line, err := u.stdout.ReadString('\n')
		if err != nil {
			return u.fail(ctx, err)
		}
		if line != want {
			return u.fail(ctx, fmt.Errorf("unexpected reply %q", line))
		}
	}
	return nil
}

// fail ends the process and classifies what git said before dying.
func (u *refUpdater) fail(ctx context.Context, err error) error {
	u.kill()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := strings.TrimSpace(u.stderr.String())
	switch {
	case strings.Contains(msg, "already exists"), strings.Contains(msg, "exists; cannot create"):
		return fmt.Errorf("%w: %s", ErrExists, msg)
	case strings.Contains(msg, "invalid ref format"), strings.Contains(msg, "refusing"):
		return fmt.Errorf("%w: %s", ErrBadArgument, msg)
	case msg != "":
		return fmt.Errorf("git update-ref --stdin: %s", msg)
	}
	return fmt.Errorf("git update-ref --stdin: %w", err)
}
