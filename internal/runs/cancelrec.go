package runs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
)

// recordedCancel is a cancellation of a run no process was executing,
// applied when it is resumed.
type recordedCancel struct {
	Task   string    `json:"task,omitempty"` // "" cancels the run
	Reason string    `json:"reason,omitempty"`
	Time   time.Time `json:"time"`
}

func cancelDir(root, run string) string { return filepath.Join(rundir.Path(root, run), "cancel") }

// RecordCancel records the cancellation of task ("" for the whole run) of
// a run that no process is executing; Resume applies it before anything
// runs, so the tasks get cancelled receipts instead of running.
func RecordCancel(root, run, task, reason string, now time.Time) error {
	if _, err := rundir.Open(root, run).Record(); err != nil {
		return err
	}
	if reason == "" {
		reason = "cancelled by the operator"
	}
	b, err := json.Marshal(recordedCancel{Task: task, Reason: reason, Time: now.UTC()})
	if err != nil {
		return err
	}
	return rundir.WriteFile(filepath.Join(cancelDir(root, run), strconv.FormatInt(now.UnixNano(), 10)+".json"), b)
}

// applyRecordedCancels cancels what RecordCancel recorded, oldest first,
// and marks the records applied.
func (r *runner) applyRecordedCancels() error {
	dir := cancelDir(r.st.Root(), r.rec.RunID)
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return err
		}
		var c recordedCancel
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadRun, n, err)
		}
		if c.Task == "" || r.tasks[c.Task] != nil {
			if _, err := r.cancelTask(c.Task, c.Reason); err != nil {
				return err
			}
		}
		if err := os.Rename(n, n+".applied"); err != nil {
			return err
		}
	}
	return nil
}
