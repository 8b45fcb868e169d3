package capability

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sort"
	"sync"
	"time"
)

// EpochState is an Epochs' content in a form that can be stored and shared
// with other processes (JSON): each root's clock and each revoked node with
// the lowest epoch it still accepts.
type EpochState struct {
	Clocks  map[string]uint64 `json:"clocks"`
	Revoked []RevokedNode     `json:"revoked"`
}

// RevokedNode is one revoked lineage node.
type RevokedNode struct {
	Lineage  []string `json:"lineage"` // root first
	MinEpoch uint64   `json:"min_epoch"`
}

// State returns a snapshot of e, revoked nodes sorted by lineage.
func (e *Epochs) State() EpochState {
	e.mu.RLock()
	defer e.mu.RUnlock()
	s := EpochState{Clocks: make(map[string]uint64, len(e.clock)), Revoked: []RevokedNode{}}
	for r, c := range e.clock {
		s.Clocks[r] = c
	}
	for n, m := range e.min {
		if lin, ok := n.lineage(); ok {
			s.Revoked = append(s.Revoked, RevokedNode{Lineage: lin, MinEpoch: m})
		}
	}
	sort.Slice(s.Revoked, func(i, j int) bool {
		return string(nodeOf(s.Revoked[i].Lineage[0], s.Revoked[i].Lineage[1:])) < string(nodeOf(s.Revoked[j].Lineage[0], s.Revoked[j].Lineage[1:]))
	})
	return s
}

// NewEpochsFrom returns an Epochs holding s (as State returned it), so that
// a restarted process keeps every revocation and never reissues an epoch.
// ErrInvalid if a revoked node has an empty lineage or root.
func NewEpochsFrom(s EpochState) (*Epochs, error) {
	e := NewEpochs()
	for r, c := range s.Clocks {
		e.clock[r] = c
	}
	for _, rn := range s.Revoked {
		if len(rn.Lineage) == 0 || rn.Lineage[0] == "" {
			return nil, detailf(ErrInvalid, "revoked node without a root")
		}
		n := nodeOf(rn.Lineage[0], rn.Lineage[1:])
		e.min[n] = max(e.min[n], rn.MinEpoch)
		e.clock[rn.Lineage[0]] = max(e.clock[rn.Lineage[0]], rn.MinEpoch)
	}
	return e, nil
}

// lineage decodes a node back into its root and segments.
func (n Node) lineage() ([]string, bool) {
	b := []byte(n)
	var out []string
	for len(b) > 0 {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, false
		}
		out = append(out, string(b[k:k+int(l)]))
		b = b[k+int(l):]
	}
	return out, len(out) > 0
}

// FileRevoker is a Revoker backed by a JSON EpochState file that another
// process rewrites atomically (by rename) as it revokes: a durable server
// or gateway started by an agent sees the run's revocations this way. It
// re-reads the file when its modification time or size changed, at most
// once per interval. It fails closed: a file that exists but cannot be read
// or parsed revokes everything until it can be; a missing file revokes
// nothing. Safe for concurrent use.
type FileRevoker struct {
	path     string
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	cur     *Epochs
	broken  bool
	checked time.Time
	mod     time.Time
	size    int64
}

var _ Revoker = (*FileRevoker)(nil)

// NewFileRevoker returns a FileRevoker for path that looks for changes at
// most once per interval (0 means every call); now is the clock (nil is
// time.Now).
func NewFileRevoker(path string, interval time.Duration, now func() time.Time) *FileRevoker {
	if now == nil {
		now = time.Now
	}
	return &FileRevoker{path: path, interval: interval, now: now, cur: NewEpochs()}
}

// MinEpoch implements Revoker.
func (f *FileRevoker) MinEpoch(n Node) uint64 {
	f.mu.Lock()
	f.refresh()
	broken, cur := f.broken, f.cur
	f.mu.Unlock()
	if broken {
		return ^uint64(0)
	}
	return cur.MinEpoch(n)
}

// refresh re-reads the file if it may have changed. Called with f.mu.
func (f *FileRevoker) refresh() {
	now := f.now()
	if !f.checked.IsZero() && now.Sub(f.checked) < f.interval {
		return
	}
	f.checked = now
	fi, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.cur, f.broken, f.mod, f.size = NewEpochs(), false, time.Time{}, -1
		return
	}
	if err != nil {
		f.broken = true
		return
	}
	if !f.broken && fi.ModTime().Equal(f.mod) && fi.Size() == f.size {
		return
	}
	b, err := os.ReadFile(f.path)
	var s EpochState
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	var e *Epochs
	if err == nil {
		e, err = NewEpochsFrom(s)
	}
	if err != nil {
		f.broken = true
		return
	}
	f.cur, f.broken, f.mod, f.size = e, false, fi.ModTime(), fi.Size()
}
