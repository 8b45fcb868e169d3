package swarm

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/atomicfile"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// capabilityKey is the executor's root key for its attempts' tokens:
// CapabilityKey, or DIR/.apiary/cap.key (made once, mode 0600), where an
// attempt's `apiary mcp`, whose worktree is below DIR, finds it.
func (x *GitExecutor) capabilityKey() ([]byte, error) {
	if x.CapabilityKey != nil {
		return x.CapabilityKey, nil
	}
	p := rundir.State(x.Dir, "cap.key")
	if b, err := os.ReadFile(p); err == nil {
		if len(b) < capability.MinKeyLen {
			return nil, fmt.Errorf("%s holds %d bytes, want %d", p, len(b), capability.MinKeyLen)
		}
		return b, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	rnd := x.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	key := make([]byte, capability.MinKeyLen)
	if _, err := io.ReadFull(rnd, key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	// Created whole or not at all: a worker beside this one never reads a
	// key half-written, and an existing key is never replaced.
	if err := atomicfile.Create(p, key, 0o600); errors.Is(err, fs.ErrExist) {
		return os.ReadFile(p) // another worker made it first
	} else if err != nil {
		return nil, err
	}
	return key, nil
}

// attemptCapability mints a swarm attempt's capability: lineage (task,
// "f"+fencing token) below the run, confined to the task's write scope and
// tools, bound to the claim's fencing token and, when the task has a wall
// clock budget, expiring a minute after it runs out.
func (x *GitExecutor) attemptCapability(j *Job, e *envelope.Envelope, now time.Time) (string, error) {
	key, err := x.capabilityKey()
	if err != nil {
		return "", fmt.Errorf("capability key: %w", err)
	}
	var scope []string
	for _, s := range e.Authority.WriteScope {
		scope = append(scope, path.Clean(s))
	}
	slices.Sort(scope)
	cs := []capability.Caveat{capability.PathPrefixes(slices.Compact(scope)...), capability.Fence(uint64(j.Claim.Token))}
	if len(e.Authority.Tools) > 0 {
		cs = append(cs, capability.Tools(append(slices.Clone(e.Authority.Tools), "model")...))
	}
	if e.Authority.Network == envelope.NetworkNone {
		cs = append(cs, capability.NoNetwork())
	}
	if w := e.Budget.WallClockS; w > 0 {
		cs = append(cs, capability.ExpiresAt(now.Add(layout.Secs(w)+time.Minute)))
	}
	id := capability.ID{Root: j.Run.Run, Path: []string{j.Name, "f" + strconv.FormatInt(j.Claim.Token, 10)}}
	tok, err := capability.Mint(key, id, cs...)
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}
