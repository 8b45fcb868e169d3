package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// The central scheduler is the baseline the scale benchmark compares
// self-organizing claims with: one process assigns every task. Workers
// report their state by heartbeat (a board write every Heartbeat, and on
// every change); the scheduler follows all heartbeats and the ready feed
// and writes each assignment into the chosen worker's host inbox. Workers
// still take the board claim (the fencing token) before working, so both
// modes give the same exactly-once guarantee and differ only in who
// decides and how much they talk.

func heartbeatPrefix(run string) string { return runPrefix(run) + "hb/" }
func heartbeatKey(run, worker string) string {
	return heartbeatPrefix(run) + esc(worker)
}
func inboxPrefix(run, host string) string { return runPrefix(run) + "assign/" + esc(host) + "/" }
func inboxKey(run, host, task string) string {
	return inboxPrefix(run, host) + esc(task)
}

type heartbeat struct {
	Worker string    `json:"worker"`
	Host   string    `json:"host"`
	Idle   bool      `json:"idle"`
	At     time.Time `json:"at"`
}

type assignment struct {
	Task   string `json:"task"`
	Worker string `json:"worker"`
}

// runCentralScheduler assigns the run's ready tasks to idle workers until
// ctx ends.
func runCentralScheduler(ctx context.Context, env *runEnv, heartbeatEvery time.Duration) error {
	run := env.run.Run
	ready := map[string]readyNote{}
	readyShard := map[string]int{}
	type wstate struct {
		hb       heartbeat
		assigned bool
	}
	workers := map[string]*wstate{}
	feed, err := follow(ctx, env.st, feedPrefix(run), func(ev board.Event) {
		rest := strings.Split(strings.TrimPrefix(ev.Key, feedPrefix(run)), "/")
		if len(rest) != 3 || rest[1] != "ready" {
			return
		}
		task := unesc(rest[2])
		if ev.Type == board.EventDelete {
			delete(ready, task)
			return
		}
		var n readyNote
		if json.Unmarshal(ev.Value, &n) == nil {
			shard := 0
			fmt.Sscanf(rest[0], "s%d", &shard)
			ready[task], readyShard[task] = n, shard
		}
	})
	if err != nil {
		return err
	}
	hbs, err := follow(ctx, env.st, heartbeatPrefix(run), func(ev board.Event) {
		if ev.Type != board.EventPut {
			return
		}
		var hb heartbeat
		if json.Unmarshal(ev.Value, &hb) != nil {
			return
		}
		w := workers[hb.Worker]
		if w == nil {
			w = &wstate{}
			workers[hb.Worker] = w
		}
		w.hb = hb
		if hb.Idle {
			w.assigned = false
		}
	})
	if err != nil {
		return err
	}
	for {
		now := env.clock.Now()
		var idle []string
		for id, w := range workers {
			if w.hb.Idle && !w.assigned && now.Sub(w.hb.At) < 3*heartbeatEvery {
				idle = append(idle, id)
			}
		}
		sort.Strings(idle)
		var tasks []string
		if len(idle) > 0 {
			tasks = make([]string, 0, len(ready))
			for t := range ready {
				tasks = append(tasks, t)
			}
			tasks = firstN(tasks, len(idle), func(a, b string) bool { return readyBefore(a, b, ready[a], ready[b]) })
		}
		var ops []board.Op
		for i := 0; i < len(idle) && i < len(tasks); i++ {
			w, t := workers[idle[i]], tasks[i]
			ops = append(ops, board.PutOp(inboxKey(run, w.hb.Host, t), mustJSON(assignment{Task: t, Worker: w.hb.Worker}), board.NoLease),
				board.DeleteOp(readyKey(run, readyShard[t], t)))
			w.assigned = true
			delete(ready, t)
			if len(ops) >= 90 {
				if _, err := env.st.Txn(ctx, board.Txn{Then: ops}); err != nil {
					return err
				}
				ops = nil
			}
		}
		if len(ops) > 0 {
			if _, err := env.st.Txn(ctx, board.Txn{Then: ops}); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-feed:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
		case f, ok := <-hbs:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
		case <-env.clock.After(heartbeatEvery / 4):
		}
	}
}

// runCentralHost runs workers that take assignments from the central
// scheduler, until ctx ends.
func runCentralHost(ctx context.Context, env *runEnv, workers []WorkerSpec, exec Executor, heartbeatEvery time.Duration) error {
	run := env.run.Run
	var mu sync.Mutex
	busy := map[string]bool{}
	beat := func(ids []string) error {
		var ops []board.Op
		now := env.clock.Now().UTC()
		mu.Lock()
		for _, id := range ids {
			ops = append(ops, board.PutOp(heartbeatKey(run, id), mustJSON(heartbeat{Worker: id, Host: env.host, Idle: !busy[id], At: now}), board.NoLease))
		}
		mu.Unlock()
		// One write per worker: each is an agent with its own heartbeat.
		for _, op := range ops {
			if _, err := env.st.Txn(ctx, board.Txn{Then: []board.Op{op}}); err != nil {
				return err
			}
		}
		return nil
	}
	ids := make([]string, len(workers))
	for i, w := range workers {
		ids[i] = w.ID
	}
	if err := beat(ids); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan string)
	inbox, err := follow(ctx, env.st, inboxPrefix(run, env.host), func(ev board.Event) {
		if ev.Type != board.EventPut {
			return
		}
		var a assignment
		if json.Unmarshal(ev.Value, &a) != nil {
			return
		}
		mu.Lock()
		busy[a.Worker] = true
		mu.Unlock()
		key := ev.Key
		wg.Go(func() {
			spec := WorkerSpec{ID: a.Worker}
			for _, w := range workers {
				if w.ID == a.Worker {
					spec = w
				}
			}
			centralWork(ctx, env, spec, exec, a.Task, key)
			select {
			case done <- a.Worker:
			case <-ctx.Done():
			}
		})
	})
	if err != nil {
		return err
	}
	next := env.clock.Now().Add(heartbeatEvery)
	for {
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-inbox:
			if !ok {
				return errWatchEnded(ctx)
			}
			f()
		case id := <-done:
			mu.Lock()
			busy[id] = false
			mu.Unlock()
			if err := beat([]string{id}); err != nil && ctx.Err() == nil {
				return err
			}
		case <-env.clock.After(max(next.Sub(env.clock.Now()), time.Millisecond)):
			next = env.clock.Now().Add(heartbeatEvery)
			if err := beat(ids); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
}

// centralWork runs one assigned task: claim, mark running (deleting the
// assignment), work, settle, release.
func centralWork(ctx context.Context, env *runEnv, w WorkerSpec, exec Executor, task, inbox string) {
	st := env.st
	t, err := st.Task(ctx, task)
	if err != nil || t.Status != board.TaskReady {
		return
	}
	p, err := decodePayload(t)
	if err != nil {
		return
	}
	cl, err := st.Claim(ctx, task, w.ID, 1, leaseOf(env.run, p))
	if err != nil {
		return
	}
	defer st.Release(context.WithoutCancel(ctx), cl)
	if t, err = markRunning(ctx, st, env.run.Run, t, p, cl, w.ID, inbox); err != nil {
		return
	}
	out, err := exec.Execute(ctx, &Job{Run: env.run, TaskID: task, Name: p.Name, Attempt: t.Attempts, WorkS: p.WorkS, Worker: w, Claim: cl})
	if err != nil || !out.Done {
		return
	}
	fin := finishedMarker(env.run.Run, p, t, cl)
	t.Status = board.TaskDone
	if _, err := settle(ctx, st, env.run, t, p, []board.Cmp{cl.Guard()}, fin); err != nil {
		env.log.Warn("central: settling", "task", task, "err", err)
	}
}
