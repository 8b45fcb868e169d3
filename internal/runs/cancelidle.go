package runs

import (
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
)

// CancelIdle records the cancellation of task ("" for the whole run) of a
// run no process executes, to apply when it is resumed (RecordCancel):
// only for a run that can be resumed (interrupted), and a task it has that
// is not done.
func CancelIdle(root, run, task, reason string, now time.Time) error {
	rep, err := LoadReport(root, run)
	if err != nil {
		return err
	}
	switch rep.Status {
	case "interrupted":
	case "running":
		return fmt.Errorf("run %s is running but its control socket does not answer: %s", run, ControlPath(root, run))
	default:
		return fmt.Errorf("run %s has finished (%s): nothing to cancel", run, rep.Status)
	}
	if task != "" {
		tr := rep.Task(task)
		if tr == nil {
			return fmt.Errorf("no task %q in run %s", task, run)
		}
		if rc, err := rundir.Open(root, run).Task(task).Receipt(); err == nil && rc != nil {
			return fmt.Errorf("task %s has already finished: %s: nothing was cancelled", task, rc.Status)
		}
	}
	return RecordCancel(root, run, task, reason, now)
}
