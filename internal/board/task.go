package board

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// TaskStatus is where a task is in its life on the board.
type TaskStatus string

// Task statuses.
const (
	TaskPending   TaskStatus = "pending"   // waiting on dependencies
	TaskReady     TaskStatus = "ready"     // claimable
	TaskRunning   TaskStatus = "running"   // claimed and being worked
	TaskDone      TaskStatus = "done"      // integrated
	TaskFailed    TaskStatus = "failed"    // gave up
	TaskCancelled TaskStatus = "cancelled" // cancelled with its subtree
)

var taskStatuses = []TaskStatus{TaskPending, TaskReady, TaskRunning, TaskDone, TaskFailed, TaskCancelled}

// Task is a unit of work published on the board. Payload is opaque to the
// board (the task envelope's JSON). Revision is the record's ModRevision,
// the expected revision for UpdateTask; Token is the fencing token of the
// claim under which the status was last set (0 if none).
type Task struct {
	ID       string          `json:"id"`
	Status   TaskStatus      `json:"status"`
	Tags     []string        `json:"tags,omitempty"`
	Deps     []string        `json:"deps,omitempty"`
	Worker   string          `json:"worker,omitempty"`
	Token    int64           `json:"token,omitempty"`
	Attempts int             `json:"attempts,omitempty"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	Revision int64           `json:"-"`
}

func taskKey(id string) string { return PrefixTasks + seg(id) }

func (t Task) validate() error {
	if t.ID == "" {
		return fmt.Errorf("task: empty id: %w", ErrInvalid)
	}
	if !slices.Contains(taskStatuses, t.Status) {
		return fmt.Errorf("task %s: unknown status %q: %w", t.ID, t.Status, ErrInvalid)
	}
	if len(t.Payload) > 0 && !json.Valid(t.Payload) {
		return fmt.Errorf("task %s: payload is not JSON: %w", t.ID, ErrInvalid)
	}
	return nil
}

func decodeTask(kv KV) (Task, error) {
	var t Task
	if err := json.Unmarshal(kv.Value, &t); err != nil {
		return Task{}, fmt.Errorf("board: task record %q: %w", kv.Key, err)
	}
	t.Revision = kv.ModRevision
	return t, nil
}

// CreateTask publishes t; it fails with ErrRevisionMismatch if a task with
// its ID exists. It returns t with its Revision set.
func (s *Store) CreateTask(ctx context.Context, t Task) (Task, error) {
	if err := t.validate(); err != nil {
		return Task{}, err
	}
	val, err := json.Marshal(t)
	if err != nil {
		return Task{}, err
	}
	rev, err := s.CAS(ctx, taskKey(t.ID), val, 0, NoLease)
	if err != nil {
		return Task{}, fmt.Errorf("create task %s: %w", t.ID, err)
	}
	t.Revision = rev
	return t, nil
}

// Task returns the task with id, or ErrNotFound.
func (s *Store) Task(ctx context.Context, id string) (Task, error) {
	kv, err := s.Get(ctx, taskKey(id))
	if err != nil {
		return Task{}, err
	}
	return decodeTask(kv)
}

// Tasks returns every task ordered by key, with the revision read at.
func (s *Store) Tasks(ctx context.Context) ([]Task, int64, error) {
	kvs, rev, err := s.List(ctx, PrefixTasks)
	if err != nil {
		return nil, 0, err
	}
	tasks := make([]Task, 0, len(kvs))
	for _, kv := range kvs {
		t, err := decodeTask(kv)
		if err != nil {
			return nil, 0, err
		}
		tasks = append(tasks, t)
	}
	return tasks, rev, nil
}

// UpdateTask replaces the task record if it is still at t.Revision and every
// guard holds (a Claim.Guard, FenceIs or Leadership.Guard). It returns the
// stored task with its new Revision; ErrRevisionMismatch if the record
// changed; ErrStaleFence if a guard failed.
func (s *Store) UpdateTask(ctx context.Context, t Task, guards ...Cmp) (Task, error) {
	if err := t.validate(); err != nil {
		return Task{}, err
	}
	if t.Revision == 0 {
		return Task{}, fmt.Errorf("update task %s: revision 0: %w", t.ID, ErrInvalid)
	}
	val, err := json.Marshal(t)
	if err != nil {
		return Task{}, err
	}
	key := taskKey(t.ID)
	res, err := s.Txn(ctx, Txn{If: append([]Cmp{ModifiedAt(key, t.Revision)}, guards...), Then: []Op{PutOp(key, val, NoLease)}})
	if err != nil {
		return Task{}, err
	}
	if !res.Succeeded {
		if cur := res.Current[0]; cur.ModRevision != t.Revision {
			if cur.ModRevision == 0 {
				return Task{}, fmt.Errorf("update task %s: %w", t.ID, ErrNotFound)
			}
			return Task{}, fmt.Errorf("update task %s: have revision %d, want %d: %w", t.ID, cur.ModRevision, t.Revision, ErrRevisionMismatch)
		}
		return Task{}, fmt.Errorf("update task %s: guard failed: %w", t.ID, ErrStaleFence)
	}
	t.Revision = res.Revision
	return t, nil
}
