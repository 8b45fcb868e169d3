// Package etcd is the board backend for many machines: a real etcd cluster
// reached through go.etcd.io/etcd/client/v3. The mapping is direct — a
// board Txn is an etcd Txn on CreateRevision/ModRevision comparisons, leases
// are etcd leases (TTL rounded up to whole seconds), watches are etcd
// watches — so a claim is Txn(If(CreateRevision(claim)==0)).Then(Put(claim,
// WithLease)) and its fencing token is the claim key's CreateRevision.
//
// It is known to work against etcd server 3.4 (Debian's etcd-server) with
// client 3.7: it uses only the KV, Txn, Lease (Grant, KeepAliveOnce,
// Revoke), Watch and Compact RPCs, all present since 3.0. A watch whose
// stream breaks (a member dies) is re-established from the next revision,
// so it neither misses nor repeats an event.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"go.uber.org/zap"

	"github.com/apiary-dev/apiary/internal/board"
)

// Options configures the etcd backend. The zero value is usable.
type Options struct {
	// Prefix namespaces every key (e.g. "apiary/run-1/"): boards with
	// different prefixes on one cluster do not see each other. Revisions and
	// compaction remain cluster-wide.
	Prefix string
	// DialTimeout bounds the initial connection; default 5s.
	DialTimeout time.Duration
	// Clock paces the Store's session keep-alives; nil means the system clock.
	Clock board.Clock
	// Logger receives the etcd client's logs; nil discards them.
	Logger *zap.Logger
}

// Open connects to the etcd cluster at endpoints ("HOST:PORT" or URLs) and
// returns a Store over it. It fails if no member answers before ctx ends or
// the dial timeout passes.
func Open(ctx context.Context, endpoints []string, opts Options) (*board.Store, error) {
	b, err := open(ctx, endpoints, opts)
	if err != nil {
		return nil, err
	}
	return board.New(b, board.Options{Clock: opts.Clock}), nil
}

type backend struct {
	cli   *clientv3.Client
	kv    clientv3.KV
	watch clientv3.Watcher
	lease clientv3.Lease

	// life is cancelled by Close; errors after it map to ErrClosed.
	life   context.Context
	cancel context.CancelFunc
}

var _ board.Backend = (*backend)(nil)

func open(ctx context.Context, endpoints []string, opts Options) (*backend, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("etcd board: no endpoints: %w", board.ErrInvalid)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          opts.DialTimeout,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd board %v: %w", endpoints, err)
	}
	b := &backend{cli: cli, kv: cli.KV, watch: cli.Watcher, lease: cli.Lease}
	if opts.Prefix != "" {
		b.kv = namespace.NewKV(cli.KV, opts.Prefix)
		b.watch = namespace.NewWatcher(cli.Watcher, opts.Prefix)
		b.lease = namespace.NewLease(cli.Lease, opts.Prefix)
	}
	b.life, b.cancel = context.WithCancel(context.Background())
	pctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	if _, err := b.Revision(pctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("etcd board %v: %w", endpoints, err)
	}
	return b, nil
}

func (b *backend) Close() error {
	b.cancel()
	return b.cli.Close()
}

// mapErr translates etcd errors to board sentinels.
func (b *backend) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case b.life.Err() != nil:
		return fmt.Errorf("%w: %v", board.ErrClosed, err)
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("%w: %v", board.ErrLeaseExpired, err)
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", board.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", board.ErrInvalid, err)
	}
	return fmt.Errorf("etcd: %w", err)
}

func toKV(kv *mvccpb.KeyValue) board.KV {
	return board.KV{
		Key: string(kv.Key), Value: kv.Value,
		CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Lease: board.LeaseID(kv.Lease),
	}
}

func (b *backend) Get(ctx context.Context, key string) (board.KV, error) {
	resp, err := b.kv.Get(ctx, key)
	if err != nil {
		return board.KV{}, b.mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return board.KV{}, fmt.Errorf("key %q: %w", key, board.ErrNotFound)
	}
	return toKV(resp.Kvs[0]), nil
}

func (b *backend) List(ctx context.Context, prefix string) ([]board.KV, int64, error) {
	resp, err := b.kv.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, 0, b.mapErr(err)
	}
	kvs := make([]board.KV, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kvs = append(kvs, toKV(kv))
	}
	return kvs, resp.Header.Revision, nil
}

func (b *backend) Revision(ctx context.Context) (int64, error) {
	resp, err := b.kv.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return 0, b.mapErr(err)
	}
	return resp.Header.Revision, nil
}

func (b *backend) Txn(ctx context.Context, t board.Txn) (board.TxnResult, error) {
	cmps := make([]clientv3.Cmp, 0, len(t.If))
	reads := make([]clientv3.Op, 0, len(t.If))
	for _, c := range t.If {
		target := clientv3.CreateRevision(c.Key)
		if c.Target == board.CmpMod {
			target = clientv3.ModRevision(c.Key)
		}
		cmps = append(cmps, clientv3.Compare(target, "=", c.Revision))
		reads = append(reads, clientv3.OpGet(c.Key))
	}
	ops := make([]clientv3.Op, 0, len(t.Then))
	for _, op := range t.Then {
		switch op.Type {
		case board.OpPut:
			var opts []clientv3.OpOption
			if op.Lease != board.NoLease {
				opts = append(opts, clientv3.WithLease(clientv3.LeaseID(op.Lease)))
			}
			ops = append(ops, clientv3.OpPut(op.Key, string(op.Value), opts...))
		case board.OpDelete:
			ops = append(ops, clientv3.OpDelete(op.Key))
		}
	}
	resp, err := b.kv.Txn(ctx).If(cmps...).Then(ops...).Else(reads...).Commit()
	if err != nil {
		return board.TxnResult{}, b.mapErr(err)
	}
	res := board.TxnResult{Succeeded: resp.Succeeded, Revision: resp.Header.Revision}
	if !resp.Succeeded {
		for i, r := range resp.Responses {
			kv := board.KV{Key: t.If[i].Key}
			if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
				kv = toKV(rr.Kvs[0])
			}
			res.Current = append(res.Current, kv)
		}
	}
	return res, nil
}

func (b *backend) Grant(ctx context.Context, ttl time.Duration) (board.LeaseID, error) {
	resp, err := b.lease.Grant(ctx, int64(math.Ceil(ttl.Seconds())))
	if err != nil {
		return board.NoLease, b.mapErr(err)
	}
	return board.LeaseID(resp.ID), nil
}

func (b *backend) Renew(ctx context.Context, id board.LeaseID) error {
	_, err := b.lease.KeepAliveOnce(ctx, clientv3.LeaseID(id))
	return b.mapErr(err)
}

func (b *backend) Revoke(ctx context.Context, id board.LeaseID) error {
	_, err := b.lease.Revoke(ctx, clientv3.LeaseID(id))
	return b.mapErr(err)
}

func (b *backend) Compact(ctx context.Context, rev int64) error {
	_, err := b.kv.Compact(ctx, rev)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil // already compacted at or beyond rev
	}
	return b.mapErr(err)
}
