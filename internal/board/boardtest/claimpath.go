package boardtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// ClaimPathConfig describes a run of ClaimPath.
type ClaimPathConfig struct {
	// Open connects a new client (a process) to the board, with its
	// traffic counter; every host and the assigner get their own.
	Open func(ctx context.Context) (*board.Store, func() board.MeterCounts, error)
	// Hosts and Workers (per host) of one slot each.
	Hosts, Workers int
	Tasks          int
	// Work is how long each task takes once a worker has it.
	Work time.Duration
	// Prefetch is how many tasks a host asks for beyond its free workers,
	// so that the claim round trip of a worker's next task overlaps its
	// current one; 0 asks for free workers only.
	Prefetch int
	// Prefix namespaces the run's keys.
	Prefix string
}

// ClaimPathResult is what ClaimPath measured.
type ClaimPathResult struct {
	Tasks           int               `json:"tasks"`
	Hosts           int               `json:"hosts"`
	Workers         int               `json:"workers"`
	DrainS          float64           `json:"drain_s"`
	ClaimsPerS      float64           `json:"claims_per_s"`
	WritesPerTask   float64           `json:"writes_per_task"`
	MessagesPerTask float64           `json:"messages_per_task"`
	Counts          board.MeterCounts `json:"counts"`
	ExactlyOnce     bool              `json:"exactly_once"`
}

// ClaimPath drains Tasks tasks through the claim path the board's
// primitives allow, and counts what it cost the board: each host keeps one
// session lease and asks for as many tasks as it has free workers in one
// write (its request key); an assigner that follows the requests claims
// tasks for the hosts on their leases with ClaimOn, moving the task records
// and writing each host's inbox in the same transaction (a batch of hosts
// per transaction); a host that follows its own inbox (deletions left out)
// works each task and records the outcome and ends the claim in one fenced
// transaction. It is the protocol the swarm's modes can follow to stay
// within three board writes per task (request, claim, done), measured
// without the swarm's policies so that what is left is the board.
func ClaimPath(ctx context.Context, cfg ClaimPathConfig) (*ClaimPathResult, error) {
	if cfg.Hosts <= 0 || cfg.Workers <= 0 || cfg.Tasks <= 0 || cfg.Open == nil {
		return nil, errors.New("boardtest: claim path needs hosts, workers, tasks and a board")
	}
	p := cfg.Prefix
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type client struct {
		st     *board.Store
		counts func() board.MeterCounts
	}
	var clients []client
	defer func() {
		for _, c := range clients {
			c.st.Close()
		}
	}()
	open := func() (client, error) {
		st, counts, err := cfg.Open(ctx)
		if err != nil {
			return client{}, err
		}
		c := client{st, counts}
		clients = append(clients, c)
		return c, nil
	}
	admin, err := open()
	if err != nil {
		return nil, err
	}
	var ops []board.Op
	for i := range cfg.Tasks {
		ops = append(ops, board.PutOp(p+"task/"+strconv.Itoa(i), []byte("ready"), board.NoLease))
		if len(ops) == board.MaxTxnOps || i == cfg.Tasks-1 {
			if _, err := admin.st.Txn(ctx, board.Txn{Then: ops}); err != nil {
				return nil, err
			}
			ops = nil
		}
	}
	runs := make([]atomic.Int32, cfg.Tasks)
	var doneTasks atomic.Int64
	finished := make(chan struct{})
	errs := make(chan error, cfg.Hosts+1)
	var wg sync.WaitGroup
	hosts := make([]client, cfg.Hosts)
	sessions := make([]*board.Session, cfg.Hosts)
	for h := range hosts {
		if hosts[h], err = open(); err != nil {
			return nil, err
		}
		if sessions[h], err = hosts[h].st.NewSession(ctx, time.Minute); err != nil {
			return nil, err
		}
	}
	assigner, err := open()
	if err != nil {
		return nil, err
	}
	var before board.MeterCounts
	for _, c := range clients[1:] {
		before = before.Add(c.counts())
	}
	// The assigner follows the requests from before any is written.
	reqs := assigner.st.WatchWith(ctx, p+"req/", 0, board.WatchOptions{NoDelete: true})
	start := time.Now()
	wg.Go(func() {
		if err := assign(ctx, assigner.st, reqs, p, cfg.Tasks); err != nil && ctx.Err() == nil {
			errs <- err
		}
	})
	for h := range hosts {
		wg.Go(func() {
			err := runPathHost(ctx, hosts[h].st, sessions[h], p, "h"+strconv.Itoa(h), cfg.Workers, cfg.Prefetch, cfg.Work, func(task int) {
				runs[task].Add(1)
				if doneTasks.Add(1) == int64(cfg.Tasks) {
					close(finished)
				}
			})
			if err != nil && ctx.Err() == nil {
				errs <- err
			}
		})
	}
	select {
	case <-finished:
	case err := <-errs:
		cancel()
		wg.Wait()
		return nil, err
	case <-ctx.Done():
		wg.Wait()
		return nil, fmt.Errorf("boardtest: claim path: %d of %d tasks done: %w", doneTasks.Load(), cfg.Tasks, ctx.Err())
	}
	drain := time.Since(start)
	var after board.MeterCounts
	for _, c := range clients[1:] {
		after = after.Add(c.counts())
	}
	cancel()
	wg.Wait()
	res := &ClaimPathResult{Tasks: cfg.Tasks, Hosts: cfg.Hosts, Workers: cfg.Hosts * cfg.Workers, DrainS: drain.Seconds(), Counts: after.Sub(before)}
	res.ClaimsPerS = float64(cfg.Tasks) / res.DrainS
	res.WritesPerTask = float64(res.Counts.Writes()) / float64(cfg.Tasks)
	res.MessagesPerTask = float64(res.Counts.Messages()) / float64(cfg.Tasks)
	res.ExactlyOnce = true
	for i := range runs {
		if runs[i].Load() != 1 {
			res.ExactlyOnce = false
		}
	}
	// Every task must be recorded done, and no claim left.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer ccancel()
	kvs, _, err := admin.st.List(cctx, p+"task/")
	if err != nil {
		return nil, err
	}
	for _, kv := range kvs {
		if !strings.HasPrefix(string(kv.Value), "done") {
			res.ExactlyOnce = false
		}
	}
	if len(kvs) != cfg.Tasks {
		res.ExactlyOnce = false
	}
	return res, nil
}

// pathRequest is a host's standing request for work: Want counts every
// slot it has ever had free (its workers, plus one per task finished), so
// that the assigner, which counts what it gave, never gives a host more
// than it can run, whatever it has not seen yet.
type pathRequest struct {
	Host  string        `json:"host"`
	Want  int           `json:"want"`
	Lease board.LeaseID `json:"lease"`
}

// assign follows the hosts' requests (on ch) and claims tasks for them,
// several hosts per transaction, a few transactions in flight at once
// (they claim disjoint tasks). A transaction whose outcome is unknown (a
// request timed out on an overloaded cluster) is settled by reading a claim
// it made; one that did not happen gives its tasks back.
func assign(ctx context.Context, st *board.Store, ch <-chan board.WatchResponse, p string, tasks int) error {
	queue := make([]int, tasks) // tasks go in order; a gatekeeper would score them
	for i := range queue {
		queue[i] = i
	}
	inflight := make(chan struct{}, 4)
	type undone struct {
		host  string
		tasks []int
	}
	back := make(chan undone, 64)
	failed := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	want := map[string]pathRequest{}
	given := map[string]int{}
	apply := func(resp board.WatchResponse) error {
		if resp.Err != nil {
			return resp.Err
		}
		for _, ev := range resp.Events {
			var r pathRequest
			if ev.Type == board.EventPut && json.Unmarshal(ev.Value, &r) == nil && r.Want > want[r.Host].Want {
				want[r.Host] = r
			}
		}
		return nil
	}
	giveBack := func(u undone) {
		queue = append(queue, u.tasks...)
		given[u.host] -= len(u.tasks)
	}
	canGive := func() bool {
		for host, r := range want {
			if given[host] < r.Want {
				return len(queue) > 0
			}
		}
		return false
	}
	for {
		if !canGive() { // nothing to decide until something changes
			select {
			case <-ctx.Done():
				return nil
			case err := <-failed:
				return err
			case u := <-back:
				giveBack(u)
			case resp, ok := <-ch:
				if !ok {
					return nil
				}
				if err := apply(resp); err != nil {
					return err
				}
			}
		}
	drain: // every request already delivered counts in this decision
		for {
			select {
			case resp, ok := <-ch:
				if !ok {
					break drain
				}
				if err := apply(resp); err != nil {
					return err
				}
			case u := <-back:
				giveBack(u)
			default:
				break drain
			}
		}
		var specs []board.ClaimSpec
		var t board.Txn
		var batch []undone
		flush := func() {
			if len(specs) == 0 {
				return
			}
			select {
			case inflight <- struct{}{}:
			case <-ctx.Done():
				return
			}
			sp, tx, bt := specs, t, batch
			specs, t, batch = nil, board.Txn{}, nil
			wg.Go(func() {
				defer func() { <-inflight }()
				res, err := st.ClaimOn(ctx, sp, tx)
				if err != nil && ctx.Err() == nil {
					// Unknown outcome: the transaction is atomic, so one of
					// its claims says whether all of it happened.
					if h, herr := st.Holder(ctx, sp[0].Task); herr == nil && h.Lease == sp[0].Lease {
						return
					} else if herr == nil || errors.Is(herr, board.ErrNotFound) {
						for _, u := range bt {
							select {
							case back <- u:
							case <-ctx.Done():
							}
						}
						return
					}
				}
				if err == nil && !res.Succeeded {
					err = fmt.Errorf("boardtest: claim path: a claim of fresh tasks was refused (taken %v)", res.Taken)
				}
				if err != nil && ctx.Err() == nil {
					select {
					case failed <- err:
					default:
					}
				}
			})
		}
		for host, r := range want {
			var mine []int
			for given[host] < r.Want && len(queue) > 0 {
				// A claim is two writes, plus the task record and the
				// host's inbox entry.
				if 2*len(specs)+len(t.Then)+4 > board.MaxTxnOps {
					batch = append(batch, undone{host, mine})
					mine = nil
					flush()
				}
				n := queue[0]
				queue = queue[1:]
				task := strconv.Itoa(n)
				given[host]++
				mine = append(mine, n)
				specs = append(specs, board.ClaimSpec{Task: p + task, Agent: host, Lease: r.Lease})
				t.Then = append(t.Then, board.PutOp(p+"task/"+task, []byte("running "+host), board.NoLease),
					board.PutOp(p+"inbox/"+host+"/"+task, nil, r.Lease))
			}
			if len(mine) > 0 {
				batch = append(batch, undone{host, mine})
			}
		}
		flush()
	}
}

// runPathHost runs one host: it keeps its request standing (written in
// the background, one write in flight, covering every slot freed since the
// last), asks for prefetch tasks beyond its workers so that a freed worker
// finds its next task already claimed, works at most workers tasks at once,
// and records each outcome with the claim's release in one transaction.
func runPathHost(ctx context.Context, st *board.Store, sess *board.Session, p, host string, workers, prefetch int, work time.Duration, ran func(int)) error {
	inbox := p + "inbox/" + host + "/"
	ch := st.WatchWith(ctx, inbox, 0, board.WatchOptions{NoDelete: true})
	type job struct {
		task, key string
		token     int64
	}
	var queue []job
	running := 0
	want, asked, putting := workers+prefetch, 0, false
	free := make(chan struct{}, workers) // at most workers tasks are in flight
	failed := make(chan error, 1)
	put := make(chan struct {
		want int
		err  error
	}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		for running < workers && len(queue) > 0 {
			j := queue[0]
			queue = queue[1:]
			running++
			wg.Go(func() {
				// The worker is free once the work is: recording it is the
				// board's round trip, not the worker's.
				select {
				case <-ctx.Done():
					return
				case <-time.After(work):
				}
				free <- struct{}{}
				if err := finish(ctx, st, p, j.task, j.key, j.token, ran); err != nil {
					select {
					case failed <- err:
					default:
					}
				}
			})
		}
		if want != asked && !putting {
			putting = true
			b, _ := json.Marshal(pathRequest{Host: host, Want: want, Lease: sess.Lease()})
			w := want
			wg.Go(func() {
				_, err := st.Put(ctx, p+"req/"+host, b, sess.Lease())
				put <- struct {
					want int
					err  error
				}{w, err}
			})
		}
		select {
		case <-ctx.Done():
			return nil
		case <-sess.Done():
			return sess.Err()
		case r := <-put:
			putting = false
			if r.err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return r.err
			}
			asked = r.want
		case err := <-failed:
			return err
		case <-free:
			running--
			want++
		case resp, ok := <-ch:
			if !ok {
				return nil
			}
			if resp.Err != nil {
				return resp.Err
			}
			for _, ev := range resp.Events {
				queue = append(queue, job{task: strings.TrimPrefix(ev.Key, inbox), key: ev.Key, token: ev.Revision})
			}
		}
	}
}

// finish records task, claimed at revision token through the inbox entry
// key, done, ending the claim, in one transaction.
func finish(ctx context.Context, st *board.Store, p, task, key string, token int64, ran func(int)) error {
	c := board.Claim{Task: p + task, Token: token, Shared: true}
	done := board.Txn{If: []board.Cmp{c.Guard()}, Then: []board.Op{
		board.PutOp(p+"task/"+task, []byte("done"), board.NoLease), c.ReleaseOp(), board.DeleteOp(key),
	}}
	for attempt := 0; ; attempt++ {
		res, err := st.Txn(ctx, done)
		if err == nil && res.Succeeded {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		// Failed, or unknown (timed out): if the record says done, it went
		// through; the guard keeps a retry from applying twice.
		if kv, gerr := st.Get(ctx, p+"task/"+task); gerr == nil && string(kv.Value) == "done" {
			break
		}
		if err == nil || attempt == 20 {
			return fmt.Errorf("boardtest: claim path: task %s (claim %d) not recorded: %v", task, token, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	n, _ := strconv.Atoi(task)
	ran(n)
	return nil
}
