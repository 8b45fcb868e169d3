package git

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Clone clones the repository at url (a path or URL) into dir, a bare
// repository when bare is set (linked worktrees can be added to it), and
// returns a Repo for dir. dir must not exist.
func Clone(ctx context.Context, url, dir string, bare bool, opt Options) (*Repo, error) {
	if strings.HasPrefix(url, "-") || strings.HasPrefix(dir, "-") {
		return nil, fmt.Errorf("%w: clone %q into %q", ErrBadArgument, url, dir)
	}
	parent := New(filepath.Dir(dir), opt)
	args := []string{"clone", "--quiet", "--no-tags"}
	if bare {
		args = append(args, "--bare")
	}
	if _, _, err := parent.run(ctx, call{args: append(args, url, dir)}); err != nil {
		return nil, err
	}
	return New(dir, opt), nil
}

// Fetch fetches refspecs ("+refs/heads/main:refs/remotes/origin/main") from
// remote, a configured remote's name, a path or a URL.
func (r *Repo) Fetch(ctx context.Context, remote string, refspecs ...string) error {
	if err := checkRev(append([]string{remote}, refspecs...)...); err != nil {
		return err
	}
	_, _, err := r.run(ctx, call{args: append([]string{"fetch", "--quiet", "--no-tags", remote}, refspecs...)})
	if ge := (*Error)(nil); errors.As(err, &ge) && strings.Contains(ge.Stderr, "couldn't find remote ref") {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// RemoteRef returns the object id ref (a full name) has on remote; "" when
// the remote has no such ref.
func (r *Repo) RemoteRef(ctx context.Context, remote, ref string) (string, error) {
	if err := checkRev(remote, ref); err != nil {
		return "", err
	}
	out, code, err := r.run(ctx, call{args: []string{"ls-remote", "--exit-code", remote, ref}, okExit: []int{2}})
	if err != nil || code == 2 {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, name, ok := strings.Cut(line, "\t")
		if ok && name == ref {
			return id, nil
		}
	}
	return "", nil
}

// RemoteRefs returns the refs of remote whose full names start with prefix
// ("refs/heads/apiary/"), each with the object id it has there.
func (r *Repo) RemoteRefs(ctx context.Context, remote, prefix string) (map[string]string, error) {
	if err := checkRev(remote, prefix); err != nil {
		return nil, err
	}
	// ls-remote matches its patterns against a ref's tail: the prefix is
	// checked again below, on the full name.
	out, _, err := r.run(ctx, call{args: []string{"ls-remote", "--refs", remote, prefix + "*"}})
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, name, ok := strings.Cut(line, "\t")
		if ok && strings.HasPrefix(name, prefix) {
			refs[name] = id
		}
	}
	return refs, nil
}

// DeleteRemoteRef deletes ref (a full name) on remote if it is still at
// old there; otherwise nothing is deleted and the error is a
// *RefMovedError.
func (r *Repo) DeleteRemoteRef(ctx context.Context, remote, ref, old string) error {
	if err := checkRev(ref, old); err != nil {
		return err
	}
	return r.Push(ctx, remote, []string{":" + ref}, PushLease{Ref: ref, Old: old})
}

// PushLease is a compare-and-swap condition of Push: Ref (a full name) must
// be at Old on the remote ("" requires that it does not exist).
type PushLease struct {
	Ref, Old string
}

// Push pushes refspecs ("<commit>:refs/heads/x") to remote atomically: all
// of them or none. With leases, each named ref must still be at its
// expected value on the remote (git push --force-with-lease), which makes
// the push a compare-and-swap on the remote's refs: if one moved, nothing
// is pushed and the error is a *RefMovedError carrying the value found.
func (r *Repo) Push(ctx context.Context, remote string, refspecs []string, leases ...PushLease) error {
	if len(refspecs) == 0 {
		return fmt.Errorf("%w: push of no refspec", ErrBadArgument)
	}
	if err := checkRev(append([]string{remote}, refspecs...)...); err != nil {
		return err
	}
	args := []string{"push", "--quiet", "--atomic", "--porcelain"}
	for _, l := range leases {
		if err := checkRev(l.Ref); err != nil {
			return err
		}
		args = append(args, "--force-with-lease="+l.Ref+":"+l.Old)
	}
	_, _, err := r.run(ctx, call{args: append(append(args, remote), refspecs...)})
	if err == nil {
		return nil
	}
	var ge *Error
	if !errors.As(err, &ge) || ctx.Err() != nil {
		return err
	}
	// Classify by reading the remote's refs rather than parsing messages.
	for _, l := range leases {
		cur, rerr := r.RemoteRef(ctx, remote, l.Ref)
		if rerr != nil {
			return err
		}
		if cur != l.Old {
			return &RefMovedError{Ref: l.Ref, Expected: l.Old, Actual: cur}
		}
	}
	return err
}
