package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/sched"
)

// Cluster mode: several gateways in front of one upstream account share its
// limits. Each gateway holds a slice of the account's per-window limits,
// leased from a coordination board (cli wires board.QuotaMember in) and
// rebalanced there as load shifts; here, a gateway never sends more than its
// slice within any window-long interval. The check sits just before a
// request goes upstream (after pacing, the breaker and admission), so every
// attempt — retries included — is counted, as the upstream counts it.

// Quota is an amount per window; a negative dimension is unlimited.
type Quota struct {
	Requests int64 `json:"requests"`
	Tokens   int64 `json:"tokens"`
}

// QuotaSlice is this gateway's share of an upstream's cluster-wide limits.
// Implementations must be safe for concurrent use and must not block.
type QuotaSlice interface {
	// Slice returns what this gateway may send per window now, and false
	// when it must send nothing (its lease on the slice is not surely held).
	Slice() (Quota, bool)
	// SetDemand reports what this gateway would send per window: what it
	// sent in the last window plus what is waiting.
	SetDemand(Quota)
}

// ClusterQuota puts one upstream under a cluster slice.
type ClusterQuota struct {
	Slice QuotaSlice
	// Window is the period of the limits; default the upstream's Window.
	Window time.Duration
	// Stats, if set, is included in /_apiary/cluster (the board member's
	// account, say).
	Stats func() any
}

// sliceGate enforces one upstream's slice with a sliding log of the sends
// of the last window.
type sliceGate struct {
	name   string
	q      ClusterQuota
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	log     []sliceSend // oldest first
	waiting Quota
	sent    int64 // in total
	waited  int64 // requests that had to wait
}

type sliceSend struct {
	at     time.Time
	tokens int64
}

// prune drops sends older than a window; the caller holds mu.
func (s *sliceGate) prune(now time.Time) (n, tokens int64) {
	from := now.Add(-s.window)
	i := 0
	for i < len(s.log) && !s.log[i].at.After(from) {
		i++
	}
	s.log = s.log[i:]
	for _, e := range s.log {
		tokens += e.tokens
	}
	return int64(len(s.log)), tokens
}

// fits reports whether one more send of tokens stays within sl.
func fits(sl Quota, n, tokens, cost int64) bool {
	if sl.Requests >= 0 && n+1 > sl.Requests {
		return false
	}
	// A request larger than the whole token slice goes alone.
	return sl.Tokens < 0 || tokens == 0 || tokens+cost <= sl.Tokens
}

// acquire waits until one request costing tokens may be sent under the
// slice, and records it. It returns context.Cause(ctx) if ctx ends first.
func (s *sliceGate) acquire(ctx context.Context, tokens int64) error {
	queued := false
	defer func() {
		if queued {
			s.mu.Lock()
			s.waiting.Requests--
			s.waiting.Tokens -= tokens
			s.mu.Unlock()
		}
	}()
	for {
		now := s.now()
		s.mu.Lock()
		n, tok := s.prune(now)
		sl, ok := s.q.Slice.Slice()
		if ok && fits(sl, n, tok, tokens) {
			s.log = append(s.log, sliceSend{at: now, tokens: tokens})
			s.sent++
			s.q.Slice.SetDemand(Quota{Requests: n + 1 + s.waiting.Requests, Tokens: tok + tokens + s.waiting.Tokens})
			s.mu.Unlock()
			return nil
		}
		if !queued {
			queued = true
			s.waiting.Requests++
			s.waiting.Tokens += tokens
			s.waited++
		}
		s.q.Slice.SetDemand(Quota{Requests: n + s.waiting.Requests, Tokens: tok + s.waiting.Tokens})
		// Wait for the oldest send to leave the window, or a little while
		// for the slice to grow.
		wait := 100 * time.Millisecond
		if ok && len(s.log) > 0 {
			wait = min(wait, max(s.log[0].at.Add(s.window).Sub(now), time.Millisecond))
		}
		s.mu.Unlock()
		if err := sched.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// ClusterStats is one upstream's cluster slice, for /_apiary/cluster.
type ClusterStats struct {
	Upstream   string `json:"upstream"`
	Live       bool   `json:"live"`
	Slice      Quota  `json:"slice"`
	SentWindow int64  `json:"sent_window"` // requests in the last window
	Waiting    int64  `json:"waiting"`
	Sent       int64  `json:"sent"`
	Waited     int64  `json:"waited"` // requests that had to wait for the slice
	Member     any    `json:"member,omitempty"`
}

func (s *sliceGate) stats() ClusterStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.prune(s.now())
	sl, ok := s.q.Slice.Slice()
	st := ClusterStats{Upstream: s.name, Live: ok, Slice: sl, SentWindow: n, Waiting: s.waiting.Requests, Sent: s.sent, Waited: s.waited}
	if s.q.Stats != nil {
		st.Member = s.q.Stats()
	}
	return st
}

// clusterTransport holds each sliced upstream's request until its slice
// allows it, then sends it with next.
type clusterTransport struct {
	next  http.RoundTripper
	gates map[string]*sliceGate // by upstream name
}

func (t *clusterTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c, _ := r.Context().Value(callKey{}).(*call)
	if c == nil {
		return t.next.RoundTrip(r)
	}
	g := t.gates[c.up.name]
	if g == nil {
		return t.next.RoundTrip(r)
	}
	maxOut := c.info.MaxOutputTokens
	if maxOut <= 0 {
		maxOut = 4096
	}
	if err := g.acquire(r.Context(), c.info.InputEstimate+c.up.outputReservation(maxOut)); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes through to the next transport.
func (t *clusterTransport) CloseIdleConnections() {
	if ci, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// withCluster wraps cfg's transport when upstreams are sliced. Called by New
// after defaults, before the gateway uses the transport.
func withCluster(cfg *Config) {
	if len(cfg.Quotas) == 0 {
		return
	}
	t := &clusterTransport{next: cfg.Transport, gates: map[string]*sliceGate{}}
	for _, u := range cfg.Upstreams {
		q, ok := cfg.Quotas[u.Name]
		if !ok || q.Slice == nil {
			continue
		}
		w := q.Window
		if w <= 0 {
			w = u.Window
		}
		if w <= 0 {
			w = time.Minute
		}
		t.gates[u.Name] = &sliceGate{name: u.Name, q: q, window: w, now: cfg.Now}
	}
	cfg.Transport = t
}

// serveCluster answers GET /_apiary/cluster: each sliced upstream's share.
func (g *Gateway) serveCluster(w http.ResponseWriter, _ *http.Request) {
	out := []ClusterStats{}
	if t, ok := g.cfg.Transport.(*clusterTransport); ok {
		for _, s := range t.gates {
			out = append(out, s.stats())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Upstream < out[j].Upstream })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
