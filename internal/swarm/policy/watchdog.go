package policy

import "time"

// Watchdog breaks silence around ready tasks nobody claims: after
// offerAfter a task is offered to the best-scoring live worker; openAfter
// later, if still unclaimed, anyone may take it. It is a pure state machine
// on the time it is given; a shard's gatekeeper drives it. It is not safe for
// concurrent use.
type Watchdog struct {
	offerAfter, openAfter time.Duration
	tasks                 map[string]*wdEntry
}

type wdStage uint8

const (
	wdWaiting wdStage = iota // ready, unclaimed, not yet offered
	wdOffered                // Offered to one worker
	wdOpen                   // open to anyone
)

type wdEntry struct {
	since time.Time // when the current stage began
	stage wdStage
}

// NewWatchdog returns a watchdog that offers a task offerAfter after it
// became ready and opens it openAfter after the offer.
func NewWatchdog(offerAfter, openAfter time.Duration) *Watchdog {
	return &Watchdog{offerAfter: offerAfter, openAfter: openAfter, tasks: map[string]*wdEntry{}}
}

// OfferAfter is how long a ready task waits for a claim before it is
// offered.
func (w *Watchdog) OfferAfter() time.Duration { return w.offerAfter }

// Ready starts watching task, unclaimed since now; a task already watched
// keeps its clock.
func (w *Watchdog) Ready(task string, now time.Time) {
	if _, ok := w.tasks[task]; !ok {
		w.tasks[task] = &wdEntry{since: now}
	}
}

// Offered records that task was offered at now.
func (w *Watchdog) Offered(task string, now time.Time) {
	w.tasks[task] = &wdEntry{since: now, stage: wdOffered}
}

// Retry restarts the offer countdown of task from now (no worker was live).
func (w *Watchdog) Retry(task string, now time.Time) {
	w.tasks[task] = &wdEntry{since: now.Add(-w.offerAfter + w.openAfter), stage: wdWaiting}
}

// Opened records that task was opened to everyone.
func (w *Watchdog) Opened(task string, now time.Time) {
	w.tasks[task] = &wdEntry{since: now, stage: wdOpen}
}

// Claimed stops watching task.
func (w *Watchdog) Claimed(task string) { delete(w.tasks, task) }

// deadline is when e next needs action; zero when it needs none.
func (w *Watchdog) deadline(e *wdEntry) time.Time {
	switch e.stage {
	case wdWaiting:
		return e.since.Add(w.offerAfter)
	case wdOffered:
		return e.since.Add(w.openAfter)
	}
	return time.Time{}
}

// Due returns the tasks to offer and to open at now.
func (w *Watchdog) Due(now time.Time) (offer, open []string) {
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

// Next is the earliest deadline; zero when nothing is pending.
func (w *Watchdog) Next() time.Time {
	var n time.Time
	for _, e := range w.tasks {
		if d := w.deadline(e); !d.IsZero() && (n.IsZero() || d.Before(n)) {
			n = d
		}
	}
	return n
}
