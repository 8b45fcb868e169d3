package runs

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/atomicfile"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Tools the runtime itself serves; a task whose envelope restricts its
// tools is still allowed these (and "model", the gateway's).
const (
	ToolModel     = "model"
	ToolSpawn     = "apiary.spawn"
	ToolHeartbeat = "apiary.heartbeat"
	ToolEscrow    = "apiary.escrow"
	// Operator tools: only a token minted for the operator carries them.
	ToolCancel = "apiary.cancel"
	// OperatorSegment is the lineage segment of operator tokens.
	OperatorSegment = "operator"
)

var runtimeTools = []string{ToolModel, ToolSpawn, ToolHeartbeat, ToolEscrow}

// KeyPath is the repository's capability root key, .apiary/cap.key.
func KeyPath(root string) string { return rundir.State(root, "cap.key") }

// RevocationsPath is the file where a run publishes its capability
// revocations (a capability.EpochState) for the processes it started.
func RevocationsPath(root, run string) string {
	return filepath.Join(rundir.Path(root, run), "revoked.json")
}

// LoadKey reads the repository's root key; create makes it (32 random
// bytes from rnd, mode 0600, never overwriting) when it does not exist.
func LoadKey(root string, create bool, rnd io.Reader) ([]byte, error) {
	p := KeyPath(root)
	b, err := os.ReadFile(p)
	if err == nil {
		if len(b) < capability.MinKeyLen {
			return nil, fmt.Errorf("%w: %s holds %d bytes, want %d", ErrConfig, p, len(b), capability.MinKeyLen)
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || !create {
		return nil, err
	}
	if err := rundir.Init(root); err != nil {
		return nil, err
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	key := make([]byte, capability.MinKeyLen)
	if _, err := io.ReadFull(rnd, key); err != nil {
		return nil, err
	}
	// Created whole or not at all: an existing key is never replaced, and a
	// concurrent run never reads a key half-written.
	if err := atomicfile.Create(p, key, 0o600); errors.Is(err, fs.ErrExist) { // made by a concurrent run: use it
		return LoadKey(root, false, nil)
	} else if err != nil {
		return nil, err
	}
	return key, nil
}

// OperatorToken mints the token an operator presents to a run's control
// socket to cancel tasks: lineage (run, "operator"), the operator tools,
// valid for ttl.
func OperatorToken(key []byte, run string, now time.Time, ttl time.Duration) (*capability.Token, error) {
	return capability.Mint(key, capability.ID{Root: run, Path: []string{OperatorSegment}},
		capability.Tools(ToolCancel), capability.ExpiresAt(now.Add(ttl)))
}

// authority mints, verifies and revokes a run's capability tokens. Root
// is the run id; a plan task's lineage is (task); a spawned child's is its
// parent attempt's lineage plus its name; an attempt adds "a<N>". Safe for
// concurrent use.
type authority struct {
	run    string
	key    []byte
	ver    *capability.Verifier
	epochs *capability.Epochs
	file   string
	hosts  []string
	now    func() time.Time
	mu     sync.Mutex // serializes writes of file
}

// newAuthority loads the run's revocations (a resumed run keeps them and
// its epoch clock) and the root key.
func newAuthority(root, run string, key []byte, hosts []string, now func() time.Time) (*authority, error) {
	ver, err := capability.NewVerifier(key, 0)
	if err != nil {
		return nil, err
	}
	a := &authority{run: run, key: key, ver: ver, epochs: capability.NewEpochs(), file: RevocationsPath(root, run), hosts: hosts, now: now}
	b, err := os.ReadFile(a.file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		var st capability.EpochState
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadRun, a.file, err)
		}
		if a.epochs, err = capability.NewEpochsFrom(st); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadRun, a.file, err)
		}
	}
	return a, nil
}

// caveats turns an envelope's authority and budget into caveats.
func (a *authority) caveats(e *envelope.Envelope, depthLeft int, expiry time.Time) []capability.Caveat {
	var cs []capability.Caveat
	if len(e.Authority.Tools) > 0 {
		cs = append(cs, capability.Tools(union(e.Authority.Tools, runtimeTools)...))
	}
	cs = append(cs, capability.PathPrefixes(scopePrefixes(e.Authority.WriteScope)...))
	switch e.Authority.Network {
	case envelope.NetworkNone:
		cs = append(cs, capability.NoNetwork())
	case envelope.NetworkAny:
	default:
		if len(a.hosts) > 0 {
			cs = append(cs, capability.Hosts(a.hosts...))
		}
	}
	if t, usd := tokenLimit(e.Budget), microUSD(e.Budget.USD); t > 0 || usd > 0 {
		cs = append(cs, capability.Budget(orUnlimited(t), orUnlimited(usd)))
	}
	cs = append(cs, capability.MaxDepth(max(depthLeft, 0)))
	if !expiry.IsZero() {
		cs = append(cs, capability.ExpiresAt(expiry))
	}
	return cs
}

// mintTask issues a plan task's token.
func (a *authority) mintTask(lineage []string, e *envelope.Envelope, depthLeft int, expiry time.Time) (*capability.Token, error) {
	id := capability.ID{Root: a.run, Path: lineage, Epoch: a.epochs.Current(a.run)}
	return capability.Mint(a.key, id, a.caveats(e, depthLeft, expiry)...)
}

// deriveChild narrows a parent attempt's token for a child task; ErrWiden
// and ErrDepth come from capability.Derive.
func deriveChild(parent *capability.Token, name string, e *envelope.Envelope) (*capability.Token, error) {
	l := capability.Limits{Paths: scopePrefixes(e.Authority.WriteScope), MaxTokens: tokenLimit(e.Budget), MaxMicroUSD: microUSD(e.Budget.USD)}
	if len(e.Authority.Tools) > 0 {
		l.Tools = union(e.Authority.Tools, runtimeTools)
	}
	if e.Authority.Network == envelope.NetworkNone {
		l.Hosts = []string{}
	}
	return parent.Derive(name, l)
}

func attemptSegment(n int) string { return "a" + strconv.Itoa(n) }

// revoke revokes a lineage node (below the run) and publishes the new
// state for the processes that verify tokens out of process.
func (a *authority) revoke(lineage []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.epochs.Revoke(a.run, lineage...)
	b, err := json.Marshal(a.epochs.State())
	if err != nil {
		return err
	}
	return rundir.WriteFile(a.file, b)
}

// verify checks a presented token against the run's key and revocations.
func (a *authority) verify(text string, req capability.Request) (*capability.Token, error) {
	tok, err := capability.Decode(text)
	if err != nil {
		return nil, err
	}
	if tok.ID().Root != a.run {
		return nil, fmt.Errorf("%w: token of run %s", capability.ErrCaveat, tok.ID().Root)
	}
	req.Now = a.now()
	if err := a.ver.Verify(tok, req, a.epochs); err != nil {
		return nil, err
	}
	return tok, nil
}

// scopePrefixes turns write-scope entries into path caveat prefixes.
func scopePrefixes(scope []string) []string {
	out := make([]string, 0, len(scope))
	for _, s := range scope {
		out = append(out, path.Clean(s))
	}
	if len(out) == 0 {
		return []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func tokenLimit(b envelope.Budget) int64 {
	if b.InputTokens > 0 && b.OutputTokens > 0 {
		return b.InputTokens + b.OutputTokens
	}
	return 0
}

func microUSD(usd float64) int64 {
	if usd <= 0 {
		return 0
	}
	return int64(math.Round(usd * 1e6))
}

func orUnlimited(v int64) int64 {
	if v <= 0 {
		return -1
	}
	return v
}
