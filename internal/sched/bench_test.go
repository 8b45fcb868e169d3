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

func BenchmarkLimiterReserve(b *testing.B) {
	l := NewLimiter(LimiterConfig{
		Requests: Rate{Limit: 1 << 30}, Input: Rate{Limit: 1 << 40},
		Output: Rate{Limit: 1 << 40}, Total: Rate{Limit: 1 << 40},
	})
	now := t0
	cost := Cost{Requests: 1, Input: 5000, Output: 1024}
	actual := Cost{Requests: 1, Input: 5000, Output: 150}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		r := l.Reserve(now, cost)
		r.Commit(now, actual)
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
// gateway makes it: budget, breaker, limiter, gate, then settling all.
func BenchmarkPath(b *testing.B) {
	budget := NewBudget(1 << 62)
	br := NewBreaker(BreakerConfig{})
	l := NewLimiter(LimiterConfig{Requests: Rate{Limit: 1 << 30}, Input: Rate{Limit: 1 << 40}, Output: Rate{Limit: 1 << 40}})
	g := NewGate(GateConfig{Limit: 64, PerAgent: 8, AgingStep: time.Second})
	a := NewAIMD(AIMDConfig{Initial: 64, Max: 64, Target: g})
	ctx := context.Background()
	req := Request{Agent: "agent-1", Class: 1, Cost: 6024}
	cost := Cost{Requests: 1, Input: 5000, Output: 1024}
	actual := Cost{Requests: 1, Input: 5000, Output: 150}
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
		r := l.Reserve(now, cost)
		t, err := g.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		t.Release()
		p.Record(now, true)
		a.Record(now, Success, 300*time.Millisecond)
		r.Commit(now, actual)
		hold.Commit(5150)
	}
}
