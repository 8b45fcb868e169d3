package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
)

// CancelAsOperator cancels task ("" for the whole run) of run in the
// repository at root as `apiary cancel` does: through the run's control
// socket with an operator token minted with the repository's key, valid
// for wait and a minute more; the runtime waits up to wait for the subtree
// to be gone. A run no process executes cannot be reached: the
// cancellation is recorded for a resume (CancelIdle) and idle is true.
// An unknown run or task, or one that has already ended, is an error
// that says nothing was cancelled.
func CancelAsOperator(ctx context.Context, root, run, task, reason string, wait time.Duration, now time.Time) (res *CancelResult, idle bool, err error) {
	if _, err := rundir.Open(root, run).Record(); err != nil {
		if errors.Is(err, rundir.ErrNoRun) {
			return nil, false, fmt.Errorf("no run %s in %s", run, root)
		}
		return nil, false, err
	}
	key, err := LoadKey(root, false, nil)
	if err != nil {
		return nil, false, fmt.Errorf("the repository's capability key: %w", err)
	}
	tok, err := OperatorToken(key, run, now, time.Minute+wait)
	if err != nil {
		return nil, false, err
	}
	res, err = DialControl(ControlPath(root, run)).Cancel(ctx, CancelRequest{Operator: tok.String(), Task: task, Reason: reason, WaitS: wait.Seconds()})
	if errors.Is(err, ErrNotLive) {
		return nil, true, CancelIdle(root, run, task, reason, now)
	}
	var ce *ControlError
	switch {
	case errors.Is(err, ErrUnknownTask):
		return nil, false, fmt.Errorf("no task %q in run %s", task, run)
	case errors.As(err, &ce) && ce.Kind == KindFinished:
		return nil, false, fmt.Errorf("%s: nothing was cancelled", ce.Message)
	case errors.As(err, &ce) && ce.Kind == KindCancelled:
		return nil, false, fmt.Errorf("run %s has ended: nothing was cancelled", run)
	case err != nil:
		return nil, false, err
	}
	return res, false, nil
}

// Complete says whether everything the cancellation reached was
// cancelled: nothing had finished first and nothing is still going.
func (r *CancelResult) Complete() bool {
	return len(r.Pending) == 0 && len(r.Finished) == 0
}

// WriteText prints r for a person: what was cancelled ("run RUN" or "task
// TASK", what) and how fast, then what had finished first and what is
// still going after wait.
func (r *CancelResult) WriteText(w io.Writer, what string, wait time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cancelled %s: %d task(s) [%s], every process gone, in %.1f ms\n", what, len(r.Cancelled), strings.Join(r.Cancelled, " "), r.AckMs)
	for _, name := range slices.Sorted(maps.Keys(r.Finished)) {
		fmt.Fprintf(&b, "not cancelled: %s had already finished: %s\n", name, r.Finished[name])
	}
	for _, name := range slices.Sorted(maps.Keys(r.Pending)) {
		fmt.Fprintf(&b, "still going after %s: %s: %s\n", wait, name, r.Pending[name])
	}
	_, err := io.WriteString(w, b.String())
	return err
}
