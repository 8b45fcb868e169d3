package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"io"
	"os"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/runs"
)

func spawnCommand() *command {
	return &command{
		Name:    "spawn",
		Args:    "ENVELOPE.json",
		Summary: "ask the running apiary for a child task (run by an agent)",
		Help: `Run inside an agent's worktree, asks the apiary run that started the agent
for a child task described by ENVELOPE.json (the task envelope schema; "-"
reads standard input). The run is reached through $APIARY_CONTROL and the
agent's capability $APIARY_CAPABILITY, both set by apiary.

The child runs at once in its own worktree, from the integration head. Its
depth is at most the run's max_depth, its write scope inside the parent's,
its budget carved out of the parent's remaining budget (at most half of
it), its capability derived from the parent's; each refusal is a typed
error. When the parent already has its window of unfinished children, the
call waits (flow control). --wait returns when the child is done, with its
receipt.

The envelope's task_id must be a UUIDv7 (the schema says so); apiary assigns
the child its own id anyway, so a missing or empty task_id is filled in here
with a fresh one. Agents find this command on their PATH: apiary puts its
own directory first.

The answer is JSON on stdout: {task, task_id, depth, budget[, receipt]},
or {error, message, context} with exit status 1.`,
		Examples: []string{
			"apiary spawn child.json",
			"apiary spawn --wait child.json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			wait := fs.Bool("wait", false, "wait for the child and print its receipt")
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "ENVELOPE.json"); err != nil {
					return err
				}
				return runSpawn(ctx, e, args[0], *wait)
			}
		},
	}
}

func runSpawn(ctx context.Context, e *env, file string, wait bool) error {
	control, token := e.Getenv("APIARY_CONTROL"), e.Getenv("APIARY_CAPABILITY")
	if control == "" || token == "" {
		return usagef("apiary spawn runs inside an apiary task: $APIARY_CONTROL and $APIARY_CAPABILITY are not set")
	}
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(io.LimitReader(e.Stdin, 1<<20))
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	if b, err = envelope.WithTaskID(b, time.Now(), rand.Reader); err != nil {
		return err
	}
	res, err := runs.DialControl(control).Spawn(ctx, runs.SpawnRequest{Capability: token, Envelope: b, Wait: wait})
	var ce *runs.ControlError
	if errors.As(err, &ce) {
		if werr := writeJSON(e.Stdout, ce); werr != nil {
			return werr
		}
		return errSilent
	}
	if err != nil {
		return err
	}
	return writeJSON(e.Stdout, res)
}
