package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/apiary-dev/apiary/internal/durable"
)

// SpawnTool is the name of the runtime's spawn tool.
const SpawnTool = "apiary.spawn"

// Spawner is how apiary.spawn reaches the running apiary: it asks the run
// for a child task described by an envelope (JSON) on behalf of the agent
// whose capability it holds, and returns the run's answer (JSON: task,
// task_id, depth, budget, and with wait the child's receipt). The run's
// control-socket client implements it; cli wires it into `apiary mcp`.
//
// An error that has an ErrorKind method (the run's typed refusals:
// permission_denied for a depth or authority beyond the parent's,
// budget_exhausted, invalid_request, escrow_elevation_required) is handed
// to the model with that kind as context.reason.
type Spawner interface {
	Spawn(ctx context.Context, envelope json.RawMessage, wait bool) (json.RawMessage, error)
}

// spawnTools: apiary.spawn, when the server has a Spawner.
func spawnTools(sp Spawner) []tool {
	if sp == nil {
		return nil
	}
	return []tool{{
		name:  SpawnTool,
		title: "Spawn a child task",
		desc: "Ask apiary for a child task: pass its task envelope (objective, authority.write_scope inside yours, " +
			"budget, completion checks, agent.profile). apiary runs it in its own worktree at the integration head, " +
			"alongside you; its budget is carved out of yours (at most half of what you have left) and its authority " +
			"is a subset of yours. Deeper than the run's max_depth, or wider than your authority, is refused with a " +
			"typed permission error. With wait:true the call returns when the child is done, with its receipt; " +
			"your task is not done before its children are.",
		params: []param{
			{name: "envelope", typ: tObject, required: true, desc: "The child's task envelope (the envelope JSON schema)."},
			{name: "wait", typ: tBoolean, def: false, desc: "Return only when the child is done, with its receipt."},
		},
		out: map[string]any{"task": oString, "task_id": oString, "depth": oInteger, "budget": oObject, "receipt": oNullable("object")},
		call: func(ctx context.Context, a args, _ durable.ProgressFunc) (durable.Result, error) {
			out, err := sp.Spawn(ctx, json.RawMessage(a.raw("envelope")), a.boolean("wait", false))
			if err != nil {
				return nil, spawnErr(err)
			}
			var res map[string]any
			if err := json.Unmarshal(out, &res); err != nil {
				return nil, err
			}
			return durable.Result(res), nil
		},
	}}
}

// spawnErr types a refusal for the model.
func spawnErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	reason := "spawn_failed"
	ctx := map[string]any{"detail": err.Error()}
	var k interface {
		ErrorKind() string
		ErrorContext() map[string]any
	}
	if errors.As(err, &k) {
		reason = k.ErrorKind()
		for key, v := range k.ErrorContext() {
			if key != "reason" {
				ctx[key] = v
			} else {
				ctx["cause"] = v
			}
		}
	}
	ctx["reason"] = reason
	return &durable.Error{Kind: durable.KindPolicyViolation, Reason: durable.ReasonPermission, Action: durable.ActionAbort, Context: ctx}
}
