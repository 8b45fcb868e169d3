package swarm

import (
	"context"
	"crypto/rand"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// HintDuplicate is the type of the hint a task is retried with after the
// merge role rejected its duplicate of an existing function.
const HintDuplicate = "duplicate"

// reuseHint tells an agent which existing function to use instead of d's.
func reuseHint(d Duplicate) string {
	where := fmt.Sprintf("%s (%s:%d)", d.Of.Name, d.Of.File, d.Of.Line)
	if d.Of.Signature != "" {
		where += ": " + d.Of.Signature
	}
	return fmt.Sprintf("%s in %s repeats %s — call it instead of adding %s.", d.Func.Name, d.Func.File, where, d.Func.Name)
}

// rejectDuplicate rejects c for adding d: a receipt for the attempt says
// which function to use, the task's template gains the hint for its next
// attempt, and the task goes back to be retried (or fails when out of
// attempts).
func (m *merger) rejectDuplicate(ctx context.Context, c *layout.Candidate, t board.Task, p *layout.Payload, d Duplicate) {
	hint := reuseHint(d)
	reason := fmt.Sprintf("duplicate (%s, %.2f): %s", d.Kind, d.Ratio, hint)
	if p.Envelope != nil {
		env := *p.Envelope
		env.Hints = append(slices.Clone(env.Hints), envelope.Hint{Type: HintDuplicate, Resolution: hint})
		p.Envelope = &env
	}
	rc := &envelope.Receipt{TaskID: c.Task, RunID: m.env.run.Run, Name: c.Name, Attempt: c.Attempt, Status: envelope.StatusFailed,
		Reason: attempt.Clip(reason, 1024), Base: c.Base, Commit: c.Commit, ChangedPaths: c.Paths, FencingToken: uint64(c.Token),
		Usage: c.Usage, Gate: &envelope.GateReason{Gate: "duplicate", File: d.Func.File, Line: d.Func.Line, Detail: hint},
		Summary: envelope.TruncateSummary("rejected by the merge role " + m.env.host + ": " + hint)}
	m.storeReceipt(p, rc, m.taskDir(c.Name).Path(fmt.Sprintf("rejected-%d.json", c.Attempt)))
	m.reject(ctx, c, t, p, reason, false)
}

// followUps adds the tasks an integrated batch calls for: one per
// duplicate merged under DupReuse, and a split task per file that became
// hot. It also counts the batch's writes per file.
func (m *merger) followUps(ctx context.Context, acc []accepted) {
	for _, a := range acc {
		for _, p := range a.c.Paths {
			if !slices.Contains(m.touches[p], a.c.Name) {
				m.touches[p] = append(m.touches[p], a.c.Name)
			}
		}
		for _, d := range a.dups {
			m.dupFuncs[d.Func.File+"\x00"+d.Func.Name] = true
			if m.opts.Policy(d.Kind) != layout.DupReuse {
				continue
			}
			nt := newTask{spec: publishSpec{name: followUpName("reuse", d.Func.Name),
				env: m.followUpEnvelope(a.p, fmt.Sprintf("Make %s in %s call %s (%s) instead of repeating its body, keeping its behaviour: the merge role found them to be %s duplicates.",
					d.Func.Name, d.Func.File, d.Of.Name, d.Of.File, d.Kind), []string{d.Func.File})}, before: d.Func.File}
			if err := m.addTask(ctx, nt); err != nil && err != errTaskExists {
				m.env.log.Warn("adding a reuse task", "func", d.Func.Name, "err", err)
			}
		}
	}
	m.hotFiles(ctx)
}

// followUpEnvelope is the template of a task the merge role adds: the
// objective, its write scope, the checks of the task that led to it.
func (m *merger) followUpEnvelope(from *layout.Payload, objective string, scope []string) *envelope.Envelope {
	e := &envelope.Envelope{Objective: objective,
		Authority:  envelope.Authority{WriteScope: scope, Network: envelope.NetworkGateway},
		Completion: envelope.Completion{Forbidden: envelope.BuiltinPatterns()}, Deps: []envelope.Dep{}}
	if from != nil && from.Envelope != nil {
		e.Completion.Checks = slices.Clone(from.Envelope.Completion.Checks)
		e.Completion.CheckTimeoutS = from.Envelope.Completion.CheckTimeoutS
		e.Agent = from.Envelope.Agent
		e.Budget = from.Envelope.Budget
	}
	if id, err := envelope.NewTaskID(m.env.clock.Now(), rand.Reader); err == nil {
		e.TaskID = id
	}
	return e
}

// followUpName is a task name for a follow-up of kind about subject:
// lower case letters, digits and dashes, at most 64 characters.
func followUpName(kind, subject string) string {
	name := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, subject), "-")
	name = kind + "-" + name
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "-")
	}
	return name
}

// splitName is the split task's name for file.
func splitName(file string) string {
	return followUpName("split", strings.TrimSuffix(path.Base(file), path.Ext(file)))
}
