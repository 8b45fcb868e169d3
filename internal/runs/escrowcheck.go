package runs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// escrowCheck serves an agent's question "may I do this?". An operation
// the policy does not escrow is allowed. An escrowed one is refused with
// escrow_elevation_required and filed in the queue, going up the task tree
// — every ancestor's capability must allow a tool, or the request is
// denied at once — to the root, where a human decides (the run's prompt,
// `apiary escrow approve`, the dashboard). Once approved, the same
// operation from the same attempt is allowed exactly once.
func (r *runner) escrowCheck(ctx context.Context, in EscrowCheck) (*EscrowVerdict, error) {
	tok, err := r.auth.verify(in.Capability, capability.Request{Tool: ToolEscrow})
	if err != nil {
		return nil, permissionError(err)
	}
	ref, ok := r.attemptOf(tok)
	if !ok {
		return nil, &ControlError{Kind: KindPermission, Message: "the capability names no live attempt of this run"}
	}
	if in.Kind != EscrowCommand && in.Kind != EscrowTool {
		return nil, &ControlError{Kind: KindInvalid, Message: fmt.Sprintf("kind %q: want %q or %q", in.Kind, EscrowCommand, EscrowTool)}
	}
	if !r.s.Escrow.Matches(in.Kind, in.Operation) {
		return &EscrowVerdict{Allowed: true}, nil
	}
	ch := make(chan escrowRoute, 1)
	if !r.call(func() { ch <- r.escrowChain(ref.task, in) }) {
		return nil, &ControlError{Kind: KindCancelled, Message: "the run has ended"}
	}
	ca := <-ch
	proto := EscrowRequest{Run: r.rec.RunID, Task: ref.task, Attempt: ref.n, Kind: in.Kind, Operation: in.Operation, Chain: ca.chain}
	req, created, err := r.escrow.request(proto, ref.lineage)
	if err != nil {
		return nil, err
	}
	if created {
		// An ancestor's authority may deny it at once; the event says so,
		// so that nobody is told to approve a request already denied.
		if ca.denied != "" {
			if d, err := r.escrow.Deny(req.ID, "apiary", ca.denied); err == nil {
				req = d
			}
		}
		_ = r.st.Emit(Event{Kind: rundir.EvEscrowRequested, Task: ref.task, Attempt: ref.n, Reason: in.Kind + ": " + in.Operation, Path: req.ID,
			Status: req.State})
		if ca.denied == "" && r.s.Ask != nil {
			r.askHuman(*req)
		}
	}
	switch req.State {
	case EscrowApproved:
		return &EscrowVerdict{Allowed: true, Request: req.ID}, nil
	case EscrowDenied:
		return nil, &ControlError{Kind: KindPermission, Message: fmt.Sprintf("escrow request %s was denied: %s", req.ID, req.Note),
			Context: map[string]any{"reason": "escrow_denied", "request": req.ID}}
	}
	return nil, &ControlError{Kind: KindEscrow,
		Message: fmt.Sprintf("%s %q needs a human's approval: request %s is pending (apiary escrow approve %s)", in.Kind, in.Operation, req.ID, req.ID),
		Context: map[string]any{"request": req.ID, "chain": req.Chain, "suggested_action": "wait_for_approval_then_retry"}}
}

// escrowRoute is the way a request goes up the tree.
type escrowRoute struct {
	chain  []string
	denied string // why an ancestor refuses it, if one does
}

// escrowChain is the way up from task to the root; for a tool, the first
// ancestor whose capability does not allow it denies the request.
func (r *runner) escrowChain(task string, in EscrowCheck) (out escrowRoute) {
	for t := r.tasks[task]; t != nil; t = t.parent {
		out.chain = append(out.chain, t.name)
		if in.Kind == EscrowTool && t.token != nil && out.denied == "" {
			if err := capability.Verify(r.auth.key, t.token, capability.Request{Tool: in.Operation, Now: r.s.now()}, nil); err != nil {
				out.denied = fmt.Sprintf("outside the authority of %s: %v", t.name, err)
			}
		}
	}
	out.chain = append(out.chain, "root")
	return out
}

// askHuman asks the run's human about a request in the background and
// records the decision.
func (r *runner) askHuman(req EscrowRequest) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		ok, err := r.s.Ask(r.runCtx, req)
		if err != nil {
			return // left pending
		}
		var d *EscrowRequest
		if ok {
			d, err = r.escrow.Approve(req.ID, "prompt", "")
		} else {
			d, err = r.escrow.Deny(req.ID, "prompt", "")
		}
		if err == nil {
			_ = r.st.Emit(Event{Kind: rundir.EvEscrowDecided, Task: req.Task, Status: d.State, Path: d.ID})
		}
	}()
}

// installHooks writes the run's git hooks (a pre-push hook that asks the
// run's escrow before any push) and returns the environment that points an
// agent's git at them; nil when the run has no apiary executable to call
// or pushes are not escrowed.
func (r *runner) installHooks() map[string]string {
	if r.s.ApiaryBin == "" || !r.s.Escrow.Matches(EscrowCommand, "git push x") {
		return nil
	}
	dir := filepath.Join(r.st.Dir(), "hooks")
	script := "#!/bin/sh\n# apiary: pushes need a human's approval (escrow)\nexec " + strconv.Quote(r.s.ApiaryBin) +
		" escrow check --kind command -- git push \"$1\" \"$2\"\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil
	}
	if err := rundir.WriteFile(filepath.Join(dir, "pre-push"), []byte(script)); err != nil {
		return nil
	}
	if err := os.Chmod(filepath.Join(dir, "pre-push"), 0o755); err != nil {
		return nil
	}
	return map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": dir}
}
