package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/gateway"
)

// clusterOptions are `apiary gateway`'s cluster-mode flags: with a board,
// every upstream with known limits is shared with the other gateways on
// that board by leasing slices of its limits.
type clusterOptions struct {
	board  string
	member string
	window time.Duration
}

func clusterFlags(fs *flag.FlagSet) *clusterOptions {
	c := &clusterOptions{}
	fs.StringVar(&c.board, "board", "", "cluster mode: share each upstream's known limits (--rpm, --tpm) with the other gateways on board `DSN` (etcd://HOST:PORT[,...] across machines) by leasing slices")
	fs.StringVar(&c.member, "cluster-id", "", "cluster mode: this gateway's member `ID` (default HOST-PID)")
	fs.DurationVar(&c.window, "limit-window", time.Minute, "the `PERIOD` of the configured limits (--rpm, --tpm, ...: an RPM limit's minute); limits learned from headers learn their own")
	return c
}

// quotaSlice adapts a board quota member to the gateway's QuotaSlice: a
// dimension the pool does not limit is unlimited (negative) for the
// gateway.
type quotaSlice struct {
	m     *board.QuotaMember
	limit board.QuotaVec
}

func (q quotaSlice) Slice() (gateway.Quota, bool) {
	v, ok := q.m.Slice()
	out := gateway.Quota{Requests: v.Requests, Tokens: v.Tokens}
	if q.limit.Requests == 0 {
		out.Requests = -1
	}
	if q.limit.Tokens == 0 {
		out.Tokens = -1
	}
	return out, ok
}

func (q quotaSlice) SetDemand(d gateway.Quota) {
	q.m.SetDemand(board.QuotaVec{Requests: max(d.Requests, 0), Tokens: max(d.Tokens, 0)})
}

// joinCluster puts cfg's upstreams with known request or token limits under
// slices leased from the board (pool "gateway/NAME") and applies
// --limit-window to every upstream. The returned stop leaves the pools and
// closes the board; without --board it does nothing.
func joinCluster(ctx context.Context, c *clusterOptions, cfg *gateway.Config) (func(), error) {
	if c.window <= 0 {
		return nil, usagef("--limit-window must be positive")
	}
	for i := range cfg.Upstreams {
		if cfg.Upstreams[i].Window == 0 {
			cfg.Upstreams[i].Window = c.window
		}
	}
	if c.board == "" {
		return func() {}, nil
	}
	st, err := openBoard(ctx, c.board)
	if err != nil {
		return nil, err
	}
	member := c.member
	if member == "" {
		host, _ := os.Hostname()
		member = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	var members []*board.QuotaMember
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, m := range members {
			_ = m.Close(sctx)
		}
		st.Close()
	}
	cfg.Quotas = map[string]gateway.ClusterQuota{}
	for _, u := range cfg.Upstreams {
		limit := board.QuotaVec{Requests: u.RPM, Tokens: u.TPM}
		if limit.Requests <= 0 && limit.Tokens <= 0 {
			continue // nothing known to share
		}
		m, err := st.JoinQuota(ctx, board.QuotaConfig{Pool: "gateway/" + u.Name, Member: member, Limit: limit, Window: u.Window})
		if err != nil {
			stop()
			return nil, fmt.Errorf("upstream %s: joining its cluster quota: %w", u.Name, err)
		}
		members = append(members, m)
		cfg.Quotas[u.Name] = gateway.ClusterQuota{Slice: quotaSlice{m: m, limit: limit}, Window: u.Window,
			Stats: func() any { return m.Stats() }}
	}
	if len(members) == 0 {
		stop()
		return nil, usagef("--board: no upstream has a known limit to share (give --rpm or --tpm)")
	}
	return stop, nil
}
