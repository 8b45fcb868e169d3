package swarm

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// SimExecutor stands in for an agent in benchmarks and tests: an attempt
// waits the task's simulated duration (WorkS, else Default) on Clock and
// reports the task done. It counts the attempts that completed per task,
// so a caller can check that every task was worked exactly once.
type SimExecutor struct {
	Clock   board.Clock // nil: the system clock
	Default time.Duration

	mu   sync.Mutex
	runs map[string]int
}

var _ Executor = (*SimExecutor)(nil)

// Execute implements Executor.
func (s *SimExecutor) Execute(ctx context.Context, j *Job) (Outcome, error) {
	clock := s.Clock
	if clock == nil {
		clock = board.SystemClock()
	}
	d := s.Default
	if j.WorkS > 0 {
		d = layout.Secs(j.WorkS)
	}
	select {
	case <-ctx.Done():
		return Outcome{}, context.Cause(ctx)
	case <-clock.After(d):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs = map[string]int{}
	}
	s.runs[j.TaskID]++
	return Outcome{Done: true}, nil
}

// Executions returns how many attempts completed, by task id.
func (s *SimExecutor) Executions() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.runs)
}
