package swarm

import (
	"context"
	"slices"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

var _ layout.BoardRW = (*committer)(nil)

// A committer writes one host's transactions — its workers' outcomes, claim
// requests and registry entries — with at most commitInFlight of them in
// flight, and merges the transactions that wait meanwhile into one, the
// way a database's group commit shares one flush: a host whose workers
// finish together costs the board one write for all of them, and however
// many workers it runs, it never has more than a few requests outstanding
// (a board saturated by a thousand concurrent writers times out the
// session keep-alives that hold every claim). A merged transaction is
// equivalent to the transactions run one after another: a transaction
// joins a batch only if its comparisons read no key another in the batch
// writes, and where several write one key (a standing request, say) the
// last write is kept. A merged transaction that is refused is run again
// one transaction at a time, so each caller sees its own result.
// decision: D-7
type committer struct {
	st   *board.Store
	reqs chan *commitReq
}

// commitInFlight bounds a host's transactions in flight.
const commitInFlight = 2

type commitReq struct {
	ctx  context.Context
	t    board.Txn
	done chan commitRes
}

type commitRes struct {
	res board.TxnResult
	err error
}

// newCommitter starts a committer that runs until ctx ends; spawn runs its
// goroutines (the caller waits for them).
func newCommitter(ctx context.Context, st *board.Store, spawn func(func())) *committer {
	c := &committer{st: st, reqs: make(chan *commitReq)}
	for range commitInFlight {
		spawn(func() { c.run(ctx) })
	}
	return c
}

// Task reads a task from the store.
func (c *committer) Task(ctx context.Context, id string) (board.Task, error) {
	return c.st.Task(ctx, id)
}

// Txn writes t, merged with whatever else is waiting.
func (c *committer) Txn(ctx context.Context, t board.Txn) (board.TxnResult, error) {
	r := &commitReq{ctx: ctx, t: t, done: make(chan commitRes, 1)}
	select {
	case c.reqs <- r:
	case <-ctx.Done():
		return board.TxnResult{}, ctx.Err()
	}
	select {
	case res := <-r.done:
		return res.res, res.err
	case <-ctx.Done():
		return board.TxnResult{}, ctx.Err() // it may yet go through, as a cancelled request may
	}
}

func (c *committer) run(ctx context.Context) {
	var held *commitReq // a request that did not fit the last batch
	for {
		var first *commitReq
		if held != nil {
			first, held = held, nil
		} else {
			select {
			case first = <-c.reqs:
			case <-ctx.Done():
				return
			}
		}
		batch := []*commitReq{first}
		var b txnBatch
		b.add(first.t)
	gather:
		for {
			select {
			case r := <-c.reqs:
				if !b.fits(r.t) {
					held = r
					break gather
				}
				b.add(r.t)
				batch = append(batch, r)
			default:
				break gather
			}
		}
		c.commit(ctx, batch, b.txn())
	}
}

// commit runs a batch as merged, or each of its transactions alone when
// the merged one is refused.
func (c *committer) commit(ctx context.Context, batch []*commitReq, merged board.Txn) {
	if len(batch) == 1 {
		r := batch[0]
		res, err := c.st.Txn(r.ctx, r.t)
		r.done <- commitRes{res, err}
		return
	}
	res, err := c.st.Txn(ctx, merged)
	if err != nil || res.Succeeded {
		for _, r := range batch {
			r.done <- commitRes{board.TxnResult{Succeeded: res.Succeeded, Revision: res.Revision}, err}
		}
		return
	}
	for _, r := range batch {
		res, err := c.st.Txn(r.ctx, r.t)
		r.done <- commitRes{res, err}
	}
}

// txnBatch accumulates transactions to merge.
type txnBatch struct {
	ifs    []board.Cmp
	ops    []board.Op
	reads  map[string]bool // keys compared
	writes map[string]int  // key -> index in ops
}

// fits reports whether t can join the batch: within the board's bounds,
// reading no key the batch writes and writing no key the batch reads.
func (b *txnBatch) fits(t board.Txn) bool {
	if len(b.ifs)+len(t.If) > board.MaxTxnOps || len(b.ops)+len(t.Then) > board.MaxTxnOps {
		return false
	}
	for _, c := range t.If {
		if _, ok := b.writes[c.Key]; ok {
			return false
		}
	}
	for _, op := range t.Then {
		if b.reads[op.Key] {
			return false
		}
	}
	return true
}

func (b *txnBatch) add(t board.Txn) {
	if b.reads == nil {
		b.reads, b.writes = map[string]bool{}, map[string]int{}
	}
	for _, c := range t.If {
		b.reads[c.Key] = true
	}
	b.ifs = append(b.ifs, t.If...)
	for _, op := range t.Then {
		if i, ok := b.writes[op.Key]; ok {
			b.ops[i] = op // a later write of the key wins, as it would in turn
			continue
		}
		b.writes[op.Key] = len(b.ops)
		b.ops = append(b.ops, op)
	}
}

func (b *txnBatch) txn() board.Txn {
	return board.Txn{If: slices.Clip(b.ifs), Then: slices.Clip(b.ops)}
}
