package runs

import (
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// taskSpan is what the events say about one task ("" is the planner).
type taskSpan struct {
	start, end time.Time
	attempts   int
	reconciles int
	usage      envelope.Usage
	running    bool
	models     []AttemptModel
}

// runTimeline summarizes a run's events.
type runTimeline struct {
	tasks       map[string]*taskSpan
	parent      map[string]string
	children    []string
	casRetries  int
	status      string // of the last run_finished after the last start, else "running"
	first, last time.Time
}

func timeline(evs []Event) *runTimeline {
	tl := &runTimeline{tasks: map[string]*taskSpan{}, parent: map[string]string{}, status: "running"}
	span := func(name string) *taskSpan {
		s := tl.tasks[name]
		if s == nil {
			s = &taskSpan{}
			tl.tasks[name] = s
		}
		return s
	}
	for _, ev := range evs {
		if tl.first.IsZero() {
			tl.first = ev.Time
		}
		tl.last = ev.Time
		switch ev.Kind {
		case rundir.EvRunStarted, rundir.EvRunResumed:
			tl.status = "running"
		case rundir.EvRunFinished:
			tl.status = ev.Status
		case rundir.EvAttemptStarted:
			s := span(ev.Task)
			if s.start.IsZero() {
				s.start = ev.Time
			}
			if ev.Role == attempt.RoleReconciler {
				s.reconciles++
			} else {
				s.attempts = max(s.attempts, ev.Attempt)
			}
			s.running = true
			s.models = append(s.models, AttemptModel{Attempt: ev.Attempt, Role: ev.Role, Agent: ev.Agent, Model: ev.Model})
		case rundir.EvAttemptFinished:
			s := span(ev.Task)
			s.running = false
			if ev.Usage != nil {
				s.usage.Add(*ev.Usage)
			}
		case rundir.EvTaskDone:
			s := span(ev.Task)
			s.end, s.running = ev.Time, false
		case rundir.EvChildAdded:
			if _, seen := tl.parent[ev.Task]; !seen {
				tl.children = append(tl.children, ev.Task)
			}
			tl.parent[ev.Task] = ev.Parent
		case rundir.EvCASRetry:
			tl.casRetries++
		}
	}
	return tl
}
