package sched

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func BenchmarkGateUncontended(b *testing.B) {
	g := NewGate(GateConfig{Limit: 64, PerAgent: 8})
	ctx := context.Background()
	req := Request{Agent: "agent-1", Class: 1, Cost: 1000}
	b.ReportAllocs()
	for b.Loop() {
		t, err := g.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		t.Release()
	}
}

// BenchmarkGateContended: 8 goroutines per CPU share 4 slots, so most
// acquisitions queue and are granted by another goroutine's Release.
func BenchmarkGateContended(b *testing.B) {
	g := NewGate(GateConfig{Limit: 4, PerAgent: 2, AgingStep: time.Second, MaxQueue: 1 << 16})
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	var n int
	b.RunParallel(func(pb *testing.PB) {
		n++
		req := Request{Agent: fmt.Sprint("agent-", n%5), Class: n % 3, Cost: 1000}
		for pb.Next() {
			t, err := g.Acquire(ctx, req)
			if err != nil {
				b.Error(err)
				return
			}
			t.Release()
		}
	})
}

func BenchmarkPacerWaitAnswer(b *testing.B) {
	p := NewPacer(PacerConfig{Requests: Rate{Limit: 1 << 30}, Input: Rate{Limit: 1 << 40},
		Output: Rate{Limit: 1 << 40}, Total: Rate{Limit: 1 << 40}})
	defer p.Close()
	ctx := context.Background()
	ask := Ask{Agent: "agent-1", Cost: Cost{Requests: 1, Input: 5000, Output: 1024}}
	none := Observation{Limit: -1, Remaining: -1}
	obs := [4]Observation{none, none, none, none}
	b.ReportAllocs()
	for b.Loop() {
		g, err := p.Wait(ctx, ask)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		g.Sent(now)
		g.Answer(now, obs, true)
	}
}

func BenchmarkBreakerAllowRecord(b *testing.B) {
	br := NewBreaker(BreakerConfig{})
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		p, err := br.Allow(now)
		if err != nil {
			b.Fatal(err)
		}
		p.Record(now, true)
	}
}

func BenchmarkBudgetReserveCommit(b *testing.B) {
	root := NewBudget(1 << 62)
	child, _ := root.Child(1 << 60)
	b.ReportAllocs()
	for b.Loop() {
		h, err := child.Reserve(6000)
		if err != nil {
			b.Fatal(err)
		}
		h.Commit(5150)
	}
}

// BenchmarkPath is one request's whole trip through the primitives, as the
// gateway makes it: budget, breaker, pacer, gate, then settling all.
func BenchmarkPath(b *testing.B) {
	budget := NewBudget(1 << 62)
	br := NewBreaker(BreakerConfig{})
	l := NewPacer(PacerConfig{Requests: Rate{Limit: 1 << 30}, Input: Rate{Limit: 1 << 40}, Output: Rate{Limit: 1 << 40}})
	defer l.Close()
	none := Observation{Limit: -1, Remaining: -1}
	obs := [4]Observation{none, none, none, none}
	ask := Ask{Agent: "agent-1", Class: 1, Cost: Cost{Requests: 1, Input: 5000, Output: 1024}}
	g := NewGate(GateConfig{Limit: 64, PerAgent: 8, AgingStep: time.Second})
	a := NewAIMD(AIMDConfig{Initial: 64, Max: 64, Target: g})
	ctx := context.Background()
	req := Request{Agent: "agent-1", Class: 1, Cost: 6024}
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		hold, err := budget.Reserve(6024)
		if err != nil {
			b.Fatal(err)
		}
		p, err := br.Allow(now)
		if err != nil {
			b.Fatal(err)
		}
		r, err := l.Wait(ctx, ask)
		if err != nil {
			b.Fatal(err)
		}
		r.Sent(now)
		t, err := g.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		t.Release()
		p.Record(now, true)
		a.Record(now, Success, 300*time.Millisecond)
		r.Answer(now, obs, true)
		hold.Commit(5150)
	}
}
