package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// The central scheduler is the baseline the scale benchmark compares
// self-organizing claims with: one process assigns every task. It uses the
// same claim path (decision D-7): each host keeps one session lease and a
// standing request (how many tasks it has ever had room for), and the
// scheduler, following every ready announcement and every request, claims
// tasks for the hosts on their leases with ClaimOn — the claim, the task's
// record and the host's inbox entry in one transaction, a batch of tasks
// per transaction, one transaction at a time. A host records each outcome,
// the claim's end and its renewed request in one fenced transaction, and
// merges the outcomes that finish together (see committer). The
// host's session is its heartbeat: the scheduler hears of a host only
// through its requests, and a host that dies takes its claims with it (the
// benchmark does not put such tasks back). Both modes give the same
// exactly-once guarantee and differ only in who decides and how much they
// talk.

func requestPrefix(run string) string    { return layout.RunPrefix(run) + "req/" }
func requestKey(run, host string) string { return requestPrefix(run) + layout.Esc(host) }

// hostRequest is a central-mode host's standing request for work: Want
// counts every slot it has ever had free (its slots and prefetch, plus one
// per task finished), so that the scheduler, which counts what it gave,
// never gives a host more than it can hold, whatever it has not seen yet.
type hostRequest struct {
	Host  string        `json:"host"`
	Want  int           `json:"want"`
	Lease board.LeaseID `json:"lease"`
}

// runCentralScheduler assigns the run's ready tasks to the hosts that
// want them until ctx ends.
func runCentralScheduler(ctx context.Context, env *runEnv) error {
	run := env.run.Run
	ready := map[string]layout.ReadyAt{}
	readyShard := map[string]int{}
	feed, err := layout.FollowBatches(ctx, env.st, layout.FeedPrefix(run), board.WatchOptions{NoDelete: true}, func(evs []board.Event) {
		for _, ev := range evs {
			rest := strings.Split(strings.TrimPrefix(ev.Key, layout.FeedPrefix(run)), "/")
			if len(rest) != 3 || rest[1] != "ready" || ev.Type != board.EventPut {
				continue
			}
			var n layout.ReadyNote
			if json.Unmarshal(ev.Value, &n) != nil {
				continue
			}
			rev := n.Rev
			if rev == 0 {
				rev = ev.Revision
			}
			shard := 0
			fmt.Sscanf(rest[0], "s%d", &shard)
			task := layout.Unesc(rest[2])
			ready[task], readyShard[task] = layout.ReadyAt{Note: n, Rev: rev}, shard
		}
	})
	if err != nil {
		return err
	}
	want := map[string]hostRequest{}
	given := map[string]int{}
	reqs, err := layout.FollowBatches(ctx, env.st, requestPrefix(run), board.WatchOptions{NoDelete: true}, func(evs []board.Event) {
		for _, ev := range evs {
			var r hostRequest
			if json.Unmarshal(ev.Value, &r) == nil && r.Want > want[r.Host].Want {
				want[r.Host] = r
			}
		}
	})
	if err != nil {
		return err
	}
	// retry is set when a batch did not go through (a busy board, a
	// transaction whose outcome was lost): its tasks went back to ready,
	// and nothing on the board may change to wake the loop again, so it
	// tries again after a pause.
	var retry <-chan time.Time
	for {
		retry = nil
		var hosts []string
		for h, r := range want {
			if given[h] < r.Want {
				hosts = append(hosts, h)
			}
		}
		var tasks []string
		if len(hosts) > 0 && len(ready) > 0 {
			n := 0
			for _, h := range hosts {
				n += want[h].Want - given[h]
			}
			tasks = make([]string, 0, len(ready))
			for t := range ready {
				tasks = append(tasks, t)
			}
			tasks = firstN(tasks, n, func(a, b string) bool { return layout.ReadyBefore(a, b, ready[a].Note, ready[b].Note) })
		}
		var specs []board.ClaimSpec
		t := board.Txn{}
		type given1 struct {
			host, task string
			rd         layout.ReadyAt
		}
		var batch []given1
		flush := func() {
			if len(specs) == 0 {
				return
			}
			res, err := env.st.ClaimOn(ctx, specs, t)
			ok := err == nil && res.Succeeded
			if err != nil && ctx.Err() == nil {
				// The outcome may be unknown: the transaction is atomic, so
				// one of its claims tells whether all of it happened.
				if h, herr := env.st.Holder(ctx, specs[0].Task); herr == nil && h.Lease == specs[0].Lease {
					ok = true
				}
			}
			if !ok && ctx.Err() == nil {
				env.log.Debug("central: a batch did not go through; its tasks go back", "err", err, "taken", res.Taken)
				for _, b := range batch {
					given[b.host]--
					ready[b.task] = b.rd
				}
				retry = env.clock.After(100 * time.Millisecond)
			}
			specs, t, batch = nil, board.Txn{}, nil
		}
		for _, h := range hosts {
			r := want[h]
			for given[h] < r.Want && len(tasks) > 0 {
				if 2*(len(specs)+1)+len(t.Then)+3 > board.MaxTxnOps {
					flush()
				}
				task := tasks[0]
				tasks = tasks[1:]
				rd := ready[task]
				delete(ready, task)
				rec, p, err := layout.DecodeRecord(rd.Note.Record, rd.Rev)
				if err != nil {
					continue
				}
				if err := layout.ClaimRecord(&rec, p, layout.RunMarker{Worker: h, Host: h, Lease: r.Lease}); err != nil {
					continue
				}
				val, err := layout.EncodeTask(rec, p)
				if err != nil {
					continue
				}
				given[h]++
				batch = append(batch, given1{host: h, task: task, rd: rd})
				specs = append(specs, board.ClaimSpec{Task: task, Agent: h, Lease: r.Lease})
				t.If = append(t.If, board.ModifiedAt(board.TaskKey(task), rd.Rev))
				t.Then = append(t.Then, board.PutOp(board.TaskKey(task), val, board.NoLease),
					board.PutOp(layout.InboxKey(run, h, task), layout.MustJSON(layout.GrantNote{Task: task, Worker: h, Shard: readyShard[task], Record: val}), r.Lease),
					board.DeleteOp(layout.ReadyKey(run, readyShard[task], task)))
			}
		}
		flush()
		select {
		case <-ctx.Done():
			return nil
		case <-retry:
		case f, ok := <-feed:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case f, ok := <-reqs:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		}
	}
}

// runCentralHost runs workers that take the central scheduler's
// assignments, until ctx ends.
func runCentralHost(ctx context.Context, env *runEnv, workers []WorkerSpec, exec Executor, prefetch int) error {
	run := env.run.Run
	sess, err := env.st.NewSession(ctx, 10*time.Second)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = sess.Close(cctx)
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(sess.Context(), cancel)()
	commit := newCommitter(ctx, env.st, wg.Go)
	slots := 0
	for _, w := range workers {
		slots += max(w.Slots, 1)
	}
	want := slots + prefetch
	request := func(n int) board.Op {
		return board.PutOp(requestKey(run, env.host), layout.MustJSON(hostRequest{Host: env.host, Want: n, Lease: sess.Lease()}), sess.Lease())
	}
	if _, err := env.st.Txn(ctx, board.Txn{Then: []board.Op{request(want)}}); err != nil {
		return err
	}
	var mu sync.Mutex // guards want: each outcome asks for one more
	type item struct {
		g   layout.GrantNote
		rev int64
	}
	var queue []item
	free := make([]WorkerSpec, 0, slots)
	for _, w := range workers {
		for range max(w.Slots, 1) {
			free = append(free, w)
		}
	}
	done := make(chan WorkerSpec)
	inbox, err := layout.FollowBatches(ctx, env.st, layout.InboxPrefix(run, env.host), board.WatchOptions{NoDelete: true}, func(evs []board.Event) {
		for _, ev := range evs {
			var g layout.GrantNote
			if json.Unmarshal(ev.Value, &g) == nil {
				queue = append(queue, item{g: g, rev: ev.Revision})
			}
		}
	})
	if err != nil {
		return err
	}
	for {
		for len(free) > 0 && len(queue) > 0 {
			w, it := free[0], queue[0]
			free, queue = free[1:], queue[1:]
			wg.Go(func() {
				centralWork(ctx, env, commit, sess, w, exec, it.g, it.rev, func() board.Op {
					mu.Lock()
					defer mu.Unlock()
					want++
					return request(want)
				})
				select {
				case done <- w:
				case <-ctx.Done():
				}
			})
		}
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-inbox:
			if !ok {
				return layout.ErrWatchEnded(ctx)
			}
			f()
		case w := <-done:
			free = append(free, w)
		}
	}
}

// centralWork runs one assigned task and records it done, ending its claim
// and renewing the host's request (ask) in the same transaction.
func centralWork(ctx context.Context, env *runEnv, commit *committer, sess *board.Session, w WorkerSpec, exec Executor, g layout.GrantNote, rev int64, ask func() board.Op) {
	t, p, err := layout.DecodeRecord(g.Record, rev)
	if err != nil {
		return
	}
	cl := board.Claim{Task: g.Task, Agent: env.host, Lease: sess.Lease(), Shared: true, Token: rev}
	out, err := exec.Execute(ctx, &Job{Run: env.run, TaskID: t.ID, Name: p.Name, Attempt: t.Attempts, WorkS: p.WorkS, Worker: w, Claim: cl, Fence: rev})
	if err != nil || !out.Done {
		return
	}
	t.Status, t.Token = board.TaskDone, rev
	end := []board.Op{cl.ReleaseOp(), board.DeleteOp(layout.InboxKey(env.run.Run, env.host, g.Task)), ask()}
	if _, err := layout.Settle(ctx, commit, env.run, t, p, []board.Cmp{cl.Guard()}, end...); err != nil && ctx.Err() == nil {
		env.log.Warn("central: settling", "task", g.Task, "err", err)
	}
}
