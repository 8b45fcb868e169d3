package swarm

import "time"

// watchdog breaks silence around ready tasks nobody claims: after
// offerAfter a task is offered to the best-scoring live worker; openAfter
// later, if still unclaimed, anyone may take it. It is a pure state machine
// on the time it is given; a shard's gatekeeper drives it.
type watchdog struct {
	offerAfter, openAfter time.Duration
	tasks                 map[string]*wdEntry
}

type wdStage uint8

const (
	wdWaiting wdStage = iota // ready, unclaimed, not yet offered
	wdOffered                // offered to one worker
	wdOpen                   // open to anyone
)

type wdEntry struct {
	since time.Time // when the current stage began
	stage wdStage
}

func newWatchdog(offerAfter, openAfter time.Duration) *watchdog {
	return &watchdog{offerAfter: offerAfter, openAfter: openAfter, tasks: map[string]*wdEntry{}}
}

// ready starts watching task, unclaimed since now; a task already watched
// keeps its clock.
func (w *watchdog) ready(task string, now time.Time) {
	if _, ok := w.tasks[task]; !ok {
		w.tasks[task] = &wdEntry{since: now}
	}
}

// offered records that task was offered at now.
func (w *watchdog) offered(task string, now time.Time) {
	w.tasks[task] = &wdEntry{since: now, stage: wdOffered}
}

// retry restarts the offer countdown of task from now (no worker was live).
func (w *watchdog) retry(task string, now time.Time) {
	w.tasks[task] = &wdEntry{since: now.Add(-w.offerAfter + w.openAfter), stage: wdWaiting}
}

// opened records that task was opened to everyone.
func (w *watchdog) opened(task string, now time.Time) {
	w.tasks[task] = &wdEntry{since: now, stage: wdOpen}
}

// claimed stops watching task.
func (w *watchdog) claimed(task string) { delete(w.tasks, task) }

// deadline is when e next needs action; zero when it needs none.
func (w *watchdog) deadline(e *wdEntry) time.Time {
	switch e.stage {
	case wdWaiting:
		return e.since.Add(w.offerAfter)
	case wdOffered:
		return e.since.Add(w.openAfter)
	}
	return time.Time{}
}

// due returns the tasks to offer and to open at now.
func (w *watchdog) due(now time.Time) (offer, open []string) {
	for task, e := range w.tasks {
		d := w.deadline(e)
		if d.IsZero() || now.Before(d) {
			continue
		}
		if e.stage == wdWaiting {
			offer = append(offer, task)
		} else {
			open = append(open, task)
		}
	}
	return offer, open
}

// next is the earliest deadline; zero when nothing is pending.
func (w *watchdog) next() time.Time {
	var n time.Time
	for _, e := range w.tasks {
		if d := w.deadline(e); !d.IsZero() && (n.IsZero() || d.Before(n)) {
			n = d
		}
	}
	return n
}
