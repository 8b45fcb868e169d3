package git

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// refUpdater creates and deletes refs through one long-lived `git
// update-ref --stdin`, one transaction per request, so a pooled checkout on
// a new branch pays no process start. git itself checks the ref's name and
// that it does not exist, under the ref's lock. A failed transaction ends
// the process (git dies on it); the next request starts another. It is safe
// for concurrent use.
type refUpdater struct{ batchProc }

func newRefUpdater(repo *Repo) *refUpdater {
	return &refUpdater{batchProc{repo: repo, args: []string{"update-ref", "--stdin"}}}
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
	if err := u.ready(); err != nil {
		return err
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
