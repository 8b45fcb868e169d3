package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"sync/atomic"
)

// Modes of containment, as Tracker.Mode reports them.
const (
	ModeCgroup = "cgroup" // a cgroup v2 per scope
	ModeGroup  = "pgroup" // a process group per scope, found again by its marker
)

// EnvScope is the environment variable that carries a scope's marker.
const EnvScope = "APIARY_SCOPE"

// ErrUnsupported: the platform cannot contain processes this way.
var ErrUnsupported = errors.New("proc: unsupported")

// Supported reports whether this platform can contain the processes
// apiary starts: nil on unix; elsewhere (Windows) an error wrapping
// ErrUnsupported that says why. Whatever runs agents or checks calls it
// before it changes anything, and refuses with its error.
func Supported() error { return errPlatform }

// Scope describes one started command and everything it started: what a
// later process needs to find them again. Record it before waiting.
type Scope struct {
	// Name is the scope's name within its owner (unique: it ends in a
	// sequence number).
	Name string `json:"name"`
	// Marker is the value of APIARY_SCOPE in every process of the scope;
	// "" for a Tracker without an owner.
	Marker string `json:"marker,omitempty"`
	// Cgroup is the scope's cgroup v2 directory; "" in ModeGroup.
	Cgroup string `json:"cgroup,omitempty"`
	// Pgid is the leader's pid, which is also its process group.
	Pgid int `json:"pgid"`
	// Start is the leader's start time in clock ticks after boot, and
	// Boot the boot it happened in: with them a reused pid is told apart.
	Start uint64 `json:"start,omitempty"`
	Boot  string `json:"boot,omitempty"`
}

// Options configure New.
type Options struct {
	// Owner names whom the processes belong to (a run id): it begins every
	// marker and names the owner's cgroup directory. "" starts unmarked
	// scopes in process groups.
	Owner string
	// Env is added to the environment of every process started.
	Env map[string]string
	// NoCgroup keeps to process groups even where cgroups are available.
	NoCgroup bool
	// OnStart sees every scope once its leader runs, before the caller
	// waits for it (to record it). It must not block.
	OnStart func(Scope)
	// Rand is the randomness of the nonce that tells apart two processes
	// of one owner (a run and its resume); nil is crypto/rand.
	Rand io.Reader
}

// Tracker starts commands in scopes. A nil *Tracker is usable: it starts
// unmarked scopes in process groups. Safe for concurrent use.
type Tracker struct {
	owner   string
	nonce   string
	env     []string
	cgroup  string // the owner's cgroup directory; "" in ModeGroup
	prefix  string // of the names of scopes started through this tracker
	onStart func(Scope)
	seq     *atomic.Int64
	boot    string
}

// New returns a tracker for owner. It uses a cgroup v2 directory of its own
// below the calling process's cgroup when it can make one and clone a
// process into it, and process groups otherwise; Mode says which. Close
// removes the directory.
func New(o Options) (*Tracker, error) {
	if errPlatform != nil {
		return nil, errPlatform
	}
	t := &Tracker{owner: o.Owner, onStart: o.OnStart, seq: new(atomic.Int64), boot: bootID()}
	if o.Owner != "" {
		rnd := o.Rand
		if rnd == nil {
			rnd = rand.Reader
		}
		var b [4]byte
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return nil, err
		}
		t.nonce = hex.EncodeToString(b[:])
	}
	for k, v := range o.Env {
		t.env = append(t.env, k+"="+v)
	}
	if !o.NoCgroup && o.Owner != "" {
		t.cgroup = ownerCgroup(sanitize(o.Owner) + "-" + t.nonce)
	}
	return t, nil
}

// Mode is ModeCgroup or ModeGroup.
func (t *Tracker) Mode() string {
	if t != nil && t.cgroup != "" {
		return ModeCgroup
	}
	return ModeGroup
}

// Dir is the owner's cgroup directory ("" in ModeGroup): record it, so
// that RemoveCgroup can end everything below it after a crash.
func (t *Tracker) Dir() string {
	if t == nil {
		return ""
	}
	return t.cgroup
}

// MarkerPrefix is what every marker of the owner begins with.
func MarkerPrefix(owner string) string { return owner + "/" }

// With returns a tracker that starts scopes named prefix/… and reports
// them to onStart (nil: the parent's).
func (t *Tracker) With(prefix string, onStart func(Scope)) *Tracker {
	if t == nil {
		t = &Tracker{seq: new(atomic.Int64), boot: bootID()}
	}
	c := *t
	if c.prefix != "" {
		prefix = c.prefix + "/" + prefix
	}
	c.prefix = prefix
	if onStart != nil {
		c.onStart = onStart
	}
	return &c
}

// Close kills whatever is left in the owner's cgroup and removes it. Call
// it when no scope of the tracker runs any more.
func (t *Tracker) Close() error {
	if t == nil || t.cgroup == "" {
		return nil
	}
	_, err := RemoveCgroup(t.cgroup)
	return err
}

// sanitize makes a scope name a single path element.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[len(b)-200:]
	}
	return string(b)
}

// contextKey carries a Tracker in a context.
type contextKey struct{}

// WithTracker returns ctx carrying t: the commands started on behalf of
// one attempt (its agent, its checks, the tools its gates run) travel with
// its context however deep the call, so all of them land in its scopes.
func WithTracker(ctx context.Context, t *Tracker) context.Context {
	return context.WithValue(ctx, contextKey{}, t)
}

// FromContext returns the tracker ctx carries; nil (process groups,
// unmarked) when it carries none.
func FromContext(ctx context.Context) *Tracker {
	t, _ := ctx.Value(contextKey{}).(*Tracker)
	return t
}
