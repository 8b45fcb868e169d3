package layout

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
)

// Candidate is a worker's finished, gated work waiting for the merge role:
// a commit on a branch of the shared remote, made under the claim whose
// fencing token it carries.
type Candidate struct {
	// Usage is what the attempt that made it spent; the merge role adds it
	// to the task's when it settles the candidate.
	Usage    envelope.Usage `json:"usage,omitzero"`
	Task     string         `json:"task"` // board id
	Name     string         `json:"name"`
	Worker   string         `json:"worker"`
	Token    int64          `json:"token"`
	Attempt  int            `json:"attempt"`
	Base     string         `json:"base"`
	Commit   string         `json:"commit"`
	Branch   string         `json:"branch"` // full ref on the remote
	Paths    []string       `json:"paths"`
	Added    int            `json:"added"`
	Removed  int            `json:"removed"`
	Changes  []string       `json:"changes,omitempty"` // intent change kinds
	Declared []string       `json:"declared,omitempty"`
	Time     time.Time      `json:"time"`
	Revision int64          `json:"-"`
}

// Lines is the size of the change.
func (c *Candidate) Lines() int { return c.Added + c.Removed }

func DecodeCandidate(kv board.KV) (*Candidate, error) {
	var c Candidate
	if err := json.Unmarshal(kv.Value, &c); err != nil {
		return nil, fmt.Errorf("%w: candidate %s: %v", ErrBadRun, kv.Key, err)
	}
	c.Revision = kv.ModRevision
	return &c, nil
}
