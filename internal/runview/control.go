package runview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// The dashboard's actions on live runs and the escrow queue: cancelling
// goes through the run's control socket with an operator token (so it
// works on a run another process executes), escrow decisions through the
// repository's file-based queue.

// runControl is dashboard.Canceller over runs' control sockets.
type runControl struct {
	root string
	now  func() time.Time
}

var _ dashboard.Canceller = runControl{}

// operatorTTL bounds the operator token minted for one cancellation.
const operatorTTL = time.Minute

func (c runControl) Cancel(ctx context.Context, run, task, reason string) error {
	if !rundir.ValidID(run) {
		return fmt.Errorf("%w: run %q", dashboard.ErrNotFound, run)
	}
	if _, err := rundir.Open(c.root, run).Record(); err != nil {
		return fmt.Errorf("%w: %w", dashboard.ErrNotFound, err)
	}
	key, err := runs.LoadKey(c.root, false, nil)
	if err != nil {
		return fmt.Errorf("%w: no capability key in %s (the run is not live): %w", dashboard.ErrConflict, c.root, err)
	}
	tok, err := runs.OperatorToken(key, run, c.now(), operatorTTL)
	if err != nil {
		return err
	}
	_, err = runs.DialControl(runs.ControlPath(c.root, run)).Cancel(ctx, runs.CancelRequest{Operator: tok.String(), Task: task, Reason: reason})
	var ce *runs.ControlError
	switch {
	case errors.Is(err, runs.ErrNotLive):
		return fmt.Errorf("%w: run %s is not live", dashboard.ErrConflict, run)
	case errors.Is(err, runs.ErrUnknownTask):
		return fmt.Errorf("%w: %w", dashboard.ErrNotFound, err)
	case errors.As(err, &ce) && ce.Kind == runs.KindCancelled:
		return fmt.Errorf("%w: %w", dashboard.ErrConflict, err)
	}
	return err
}

// escrowQueue is dashboard.EscrowSource and EscrowDecider over the
// repository's escrow queue.
type escrowQueue struct{ q *runs.EscrowQueue }

var (
	_ dashboard.EscrowSource  = escrowQueue{}
	_ dashboard.EscrowDecider = escrowQueue{}
)

func (e escrowQueue) Escrow(context.Context) ([]dashboard.EscrowRequest, error) {
	rs, err := e.q.List()
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.EscrowRequest, 0, len(rs))
	for _, r := range rs {
		out = append(out, dashboard.EscrowRequest{ID: r.ID, Run: r.Run, Task: r.Task, Operation: r.Operation,
			Detail: r.Kind, State: r.State, Created: r.Created, Reviewer: r.DecidedBy, Note: r.Note})
	}
	return out, nil
}

func (e escrowQueue) decided(err error) error {
	switch {
	case errors.Is(err, runs.ErrNoRequest):
		return fmt.Errorf("%w: %w", dashboard.ErrNotFound, err)
	case errors.Is(err, runs.ErrDecided):
		return fmt.Errorf("%w: %w", dashboard.ErrConflict, err)
	}
	return err
}

func (e escrowQueue) ApproveEscrow(_ context.Context, id, reviewer, note string) error {
	_, err := e.q.Approve(id, reviewer, note)
	return e.decided(err)
}

func (e escrowQueue) DenyEscrow(_ context.Context, id, reviewer, note string) error {
	_, err := e.q.Deny(id, reviewer, note)
	return e.decided(err)
}

// reviewQueue is dashboard.ReviewSource over the repository's reviews:
// those escalated to a human whose resolution is still pending.
type reviewQueue struct{ root string }

var _ dashboard.ReviewSource = reviewQueue{}

func (q reviewQueue) Escalated(ctx context.Context) ([]dashboard.Escalated, error) {
	paths, err := filepath.Glob(filepath.Join(rundir.State(q.root, "reviews"), "*", "report.json"))
	if err != nil {
		return nil, err
	}
	out := []dashboard.Escalated{}
	for _, p := range paths {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var rep review.Report
		if json.Unmarshal(b, &rep) != nil || rep.Reviewers == nil {
			continue
		}
		esc := rep.Reviewers.Escalation
		if esc == nil || esc.To != "human" || esc.Resolution != "pending" {
			continue
		}
		out = append(out, dashboard.Escalated{ID: rep.ReviewID, Reason: esc.Reason, Head: rep.Head, Started: rep.Started,
			Command: "apiary review resolve " + rep.ReviewID + " approve|block"})
	}
	slices.SortFunc(out, func(a, b dashboard.Escalated) int { return a.Started.Compare(b.Started) })
	return out, nil
}
