//go:build unix

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// TestGatewayCluster is the gateway's cluster mode: three `apiary
// gateway --board etcd://…` processes in front of one llmfake account share
// its request limit by leasing slices from a 3-member etcd cluster. Load
// first goes to one gateway only, then to the other two: llmfake's
// per-window counts never exceed the limit and it refuses nothing, the
// lone busy gateway's slice grows past an even split, and after the shift
// the newly busy gateways' slices grow while the first one's shrinks.
func TestGatewayCluster(t *testing.T) {
	t.Parallel()
	const limit, window = 30, time.Second
	c := etcdtest.Start(t, envtest.Command(t, "etcd"), 3)
	dsn := "etcd://" + strings.Join(c.Endpoints(), ",") + "/gw"
	fake, err := llmfake.New(llmfake.Config{Limits: llmfake.Limits{RPM: limit, WindowLength: window}}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := llmfake.Serve(l, fake)
	t.Cleanup(func() { hs.Close() })
	dir := t.TempDir()
	var urls []string
	for i := range 3 {
		p := start(t, fmt.Sprintf("gateway%d", i), dir, "gateway", "--board", dsn, "--cluster-id", fmt.Sprintf("g%d", i),
			"--upstream", "anthropic=http://"+l.Addr().String(), "--rpm", fmt.Sprint(limit), "--limit-window", window.String(),
			"--listen", "127.0.0.1:0", "--ledger", filepath.Join(dir, fmt.Sprintf("ledger%d.db", i)), "--log-level", "warn")
		urls = append(urls, strings.TrimPrefix(p.waitLine(t, "listening on ", time.Minute), "listening on "))
	}
	slice := func(u string) int64 {
		resp, err := http.Get(u + "/_apiary/cluster")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var cs []gateway.ClusterStats
		if err := json.NewDecoder(resp.Body).Decode(&cs); err != nil || len(cs) != 1 {
			t.Fatalf("/_apiary/cluster of %s: %+v, %v", u, cs, err)
		}
		return cs[0].Slice.Requests
	}
	load := func(targets []string, d time.Duration) {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		var wg sync.WaitGroup
		for i := range 12 {
			u := targets[i%len(targets)]
			wg.Go(func() {
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u+"/v1/messages",
						strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
					req.Header.Set("x-api-key", "k")
					req.Header.Set("anthropic-version", "2023-06-01")
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}
			})
		}
		wg.Wait()
	}
	load(urls[:1], 4*window)
	first := []int64{slice(urls[0]), slice(urls[1]), slice(urls[2])}
	load(urls[1:], 4*window)
	second := []int64{slice(urls[0]), slice(urls[1]), slice(urls[2])}
	t.Logf("slices with load on g0: %v; after the shift to g1, g2: %v", first, second)
	if first[0] <= limit/3 {
		t.Errorf("g0 alone under load holds %d of %d; want more than an even split", first[0], limit)
	}
	if second[0] >= first[0] || second[1] <= first[1] || second[2] <= first[2] {
		t.Errorf("slices did not follow the load: %v then %v", first, second)
	}
	var total int64
	for _, ks := range fake.Stats().Keys {
		for _, w := range ks.Windows {
			if w.Requests > limit {
				t.Errorf("llmfake window %d: %d requests over the limit %d", w.Index, w.Requests, limit)
			}
			total += w.Requests
		}
		if ks.RateLimited > 0 {
			t.Errorf("llmfake refused %d requests", ks.RateLimited)
		}
	}
	// Eight windows of load: the cluster must use the limit, not starve.
	if total < 4*limit {
		t.Errorf("only %d requests reached llmfake in 8 windows of %d", total, limit)
	}
}
