package swarm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// TestMergeTakeoverKeepsDuplicates runs c (Sum) and d (SumAll, its exact
// duplicate, merged with a warning) with one merge role, stops it, and
// lets a second take over: the utility index the successor publishes from
// the integrated head still leaves SumAll out, though the successor never
// saw it found.
func TestMergeTakeoverKeepsDuplicates(t *testing.T) {
	t.Parallel()
	f := newSwarmFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	plan := f.plan[:strings.Index(f.plan, "tasks:")] + `tasks:
  - {id: c, objective: add Sum, agent: sh, write_scope: [util/c.go]}
  - {id: d, objective: add SumAll, agent: sh, write_scope: [util/d.go], deps: [c]}
`
	r, err := Publish(ctx, PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan), Options: layout.Options{Shards: 1}})
	if err != nil {
		t.Fatal(err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); f.wg.Wait() }()
	mergeCfg := func(name string) *MergeConfig {
		return &MergeConfig{Dir: filepath.Join(f.work, name), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}
	}
	f.host(t, hctx, HostConfig{Host: "h1", Run: r.Run, TTL: 10 * time.Second, Workers: []WorkerSpec{{ID: "w1", Profile: "sh"}}})
	m1ctx, m1stop := context.WithCancel(hctx)
	defer m1stop()
	f.host(t, m1ctx, HostConfig{Host: "m1", Run: r.Run, TTL: 10 * time.Second, Merge: mergeCfg("m1")})
	deadline := time.Now().Add(time.Minute)
	for {
		rep, err := LoadReport(ctx, f.st, r.Run)
		if err == nil && rep.OK() && len(rep.Duplicates) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish with one duplicate: %+v %v", rep, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	names := func() []string {
		us, err := ReadUtils(ctx, f.st, r.Run)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range us {
			out = append(out, u.Name)
		}
		return out
	}
	kv, err := f.st.Get(ctx, utilsKey(r.Run))
	if err != nil {
		t.Fatal(err)
	}
	before := names()
	m1stop()
	f.host(t, hctx, HostConfig{Host: "m2", Run: r.Run, TTL: 10 * time.Second, Merge: mergeCfg("m2")})
	for {
		now, err := f.st.Get(ctx, utilsKey(r.Run))
		if err != nil && !errors.Is(err, board.ErrNotFound) {
			t.Fatal(err)
		}
		if err == nil && now.ModRevision > kv.ModRevision {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second merge role never published its utility index")
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := names()
	for _, n := range [][]string{before, after} {
		if len(n) != 1 || n[0] != "Sum" {
			t.Errorf("utility index before the takeover %v, after %v; want [Sum] both times", before, after)
			break
		}
	}
}
