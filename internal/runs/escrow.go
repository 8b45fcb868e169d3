package runs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
)

// EscrowPolicy names the operations apiary holds in escrow: a task (every
// agent is a child of the run's root) is refused them with
// escrow_elevation_required until a human at the root approves the
// request, once.
type EscrowPolicy struct {
	// Commands are command prefixes, compared word by word ("git push"
	// matches "git push origin main", not "git pushd").
	Commands []string `json:"commands,omitempty"`
	// Tools are tool names (durable rw.* tools, say).
	Tools []string `json:"tools,omitempty"`
}

// Kinds of escrowed operations.
const (
	EscrowCommand = "command"
	EscrowTool    = "tool"
)

// Matches reports whether the operation is escrowed.
func (p EscrowPolicy) Matches(kind, op string) bool {
	switch kind {
	case EscrowTool:
		return slices.Contains(p.Tools, strings.TrimSpace(op))
	case EscrowCommand:
		words := strings.Fields(op)
		for _, c := range p.Commands {
			cw := strings.Fields(c)
			if len(cw) > 0 && len(words) >= len(cw) && slices.Equal(words[:len(cw)], cw) {
				return true
			}
		}
	}
	return false
}

// States of an escrow request.
const (
	EscrowPending  = "pending"
	EscrowApproved = "approved"
	EscrowDenied   = "denied"
	EscrowUsed     = "used" // approved and consumed by the operation
)

// EscrowRequest is one request for a human's approval, as stored in
// .apiary/escrow/ID.json.
type EscrowRequest struct {
	ID        string `json:"id"`
	Run       string `json:"run"`
	Task      string `json:"task"`
	Attempt   int    `json:"attempt"`
	Kind      string `json:"kind"`
	Operation string `json:"operation"`
	// Chain is the way up the task tree the request went: the task, its
	// ancestors, then "root", where a human decides.
	Chain     []string  `json:"chain"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	Decided   time.Time `json:"decided,omitzero"`
	DecidedBy string    `json:"decided_by,omitempty"`
	Note      string    `json:"note,omitempty"`
}

// Errors of the escrow queue.
var (
	ErrNoRequest = errors.New("no such escrow request")
	ErrDecided   = errors.New("escrow request already decided")
)

// EscrowQueue is the file-based queue of escrow requests under
// .apiary/escrow: the run adds requests, and a human approves or denies
// them through `apiary escrow`, the run's terminal prompt or the
// dashboard. Every change is an atomic file write under an flock, so
// processes can share it. The zero value is not usable: see
// NewEscrowQueue.
type EscrowQueue struct {
	dir string
	now func() time.Time
}

// NewEscrowQueue returns the queue of the repository at root; now is the
// clock of decisions (nil: time.Now).
func NewEscrowQueue(root string, now func() time.Time) *EscrowQueue {
	if now == nil {
		now = time.Now
	}
	return &EscrowQueue{dir: rundir.State(root, "escrow"), now: now}
}

var escrowIDPattern = taskNamePattern

// locked runs fn holding the queue's lock (rundir.ErrNoLocks where the
// platform has no flock: the queue is not changed unprotected).
func (q *EscrowQueue) locked(fn func() error) error {
	if err := os.MkdirAll(q.dir, 0o700); err != nil {
		return err
	}
	return rundir.WithLock(filepath.Join(q.dir, ".lock"), 0o600, fn)
}

func (q *EscrowQueue) path(id string) string { return filepath.Join(q.dir, id+".json") }

func (q *EscrowQueue) read(id string) (*EscrowRequest, error) {
	if !escrowIDPattern.MatchString(id) {
		return nil, fmt.Errorf("%w: %q", ErrNoRequest, id)
	}
	b, err := os.ReadFile(q.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoRequest, id)
	}
	if err != nil {
		return nil, err
	}
	var r EscrowRequest
	if err := json.Unmarshal(b, &r); err != nil || r.ID != id {
		return nil, fmt.Errorf("%w: %s: unreadable: %v", ErrNoRequest, id, err)
	}
	return &r, nil
}

func (q *EscrowQueue) write(r *EscrowRequest) error { return rundir.WriteJSON(q.path(r.ID), r) }

// List returns every request, oldest first.
func (q *EscrowQueue) List() ([]EscrowRequest, error) {
	names, err := filepath.Glob(filepath.Join(q.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []EscrowRequest
	for _, n := range names {
		r, err := q.read(strings.TrimSuffix(filepath.Base(n), ".json"))
		if err != nil {
			continue // a file that is not ours
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Get returns one request.
func (q *EscrowQueue) Get(id string) (*EscrowRequest, error) { return q.read(id) }

// Approve records a human's approval of a pending request.
func (q *EscrowQueue) Approve(id, by, note string) (*EscrowRequest, error) {
	return q.decide(id, EscrowApproved, by, note)
}

// Deny records a human's refusal of a pending request.
func (q *EscrowQueue) Deny(id, by, note string) (*EscrowRequest, error) {
	return q.decide(id, EscrowDenied, by, note)
}

func (q *EscrowQueue) decide(id, state, by, note string) (*EscrowRequest, error) {
	var out *EscrowRequest
	err := q.locked(func() error {
		r, err := q.read(id)
		if err != nil {
			return err
		}
		if r.State != EscrowPending {
			return fmt.Errorf("%w: %s is %s", ErrDecided, id, r.State)
		}
		r.State, r.Decided, r.DecidedBy, r.Note = state, q.now().UTC(), by, note
		out = r
		return q.write(r)
	})
	return out, err
}

// request finds the open request for an operation of a task attempt's
// lineage, or files a new pending one (created reports which). An approved
// request is consumed (State used) and returned approved.
func (q *EscrowQueue) request(proto EscrowRequest, lineage []string) (r *EscrowRequest, created bool, err error) {
	sum := sha256.Sum256([]byte(strings.Join(append([]string{proto.Run, proto.Kind, proto.Operation}, lineage...), "\x00")))
	base := hex.EncodeToString(sum[:6])
	err = q.locked(func() error {
		for n := 1; ; n++ {
			id := base + "-" + strconv.Itoa(n)
			cur, err := q.read(id)
			if errors.Is(err, ErrNoRequest) {
				proto.ID, proto.State, proto.Created = id, EscrowPending, q.now().UTC()
				r, created = &proto, true
				return q.write(r)
			}
			if err != nil {
				return err
			}
			switch cur.State {
			case EscrowPending, EscrowDenied:
				r = cur
				return nil
			case EscrowApproved:
				cur.State = EscrowUsed
				if err := q.write(cur); err != nil {
					return err
				}
				cur.State = EscrowApproved
				r = cur
				return nil
			}
			// used: the next request for the same operation is a new one
		}
	})
	return r, created, err
}
