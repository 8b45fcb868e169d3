package sched_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apiary-dev/apiary/internal/sched"
)

// A request that must be retried gives its admission slot back before it
// sleeps, so waiting requests run meanwhile, and gives up once the total
// wait would pass the backoff's MaxWait.
func ExampleGate_retry() {
	ctx := context.Background()
	gate := sched.NewGate(sched.GateConfig{Limit: 1})
	backoff := &sched.Backoff{Base: time.Millisecond, Cap: 4 * time.Millisecond, MaxWait: 20 * time.Millisecond,
		Rand: rand.New(rand.NewPCG(1, 2))}
	send := func(attempt int) error { // the upstream recovers on the third try
		if attempt < 2 {
			return errors.New("503")
		}
		return nil
	}
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		ticket, err := gate.Acquire(ctx, sched.Request{Agent: "a", Class: 1, Cost: 1200})
		if err != nil {
			fmt.Println("not admitted:", err)
			return
		}
		err = send(attempt)
		ticket.Release() // before sleeping: a sleeping request holds no slot
		if err == nil {
			fmt.Println("done after", attempt+1, "attempts; in flight:", gate.Stats().InFlight)
			return
		}
		d, ok := backoff.Next(attempt, 0, waited)
		if !ok {
			fmt.Println("giving up:", err)
			return
		}
		if err := sched.Sleep(ctx, d); err != nil {
			return
		}
		waited += d
	}
	// Output: done after 3 attempts; in flight: 0
}

// A supervisor carves a child's budget out of its own; what the child does
// not spend returns when it is closed and settled.
func ExampleBudget_Carve() {
	parent := sched.NewBudget(10_000)
	child, _ := parent.Carve(0.5, 0) // at most half of what is left
	hold, _ := child.Reserve(3_000)
	hold.Commit(1_200)
	_, err := child.Reserve(4_000)
	fmt.Println(errors.Is(err, sched.ErrBudgetExhausted))
	child.Close()
	s := parent.Stats()
	fmt.Println(s.Spent, s.Remaining)
	// Output:
	// true
	// 1200 8800
}

// The breaker opens on a failure rate and lets one probe through after the
// open interval.
func ExampleBreaker() {
	b := sched.NewBreaker(sched.BreakerConfig{MinRequests: 4, FailureRate: 0.5, OpenFor: 5 * time.Second})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 4 {
		p, _ := b.Allow(now)
		p.Record(now, false) // 503s
	}
	_, err := b.Allow(now)
	var open *sched.OpenError
	if errors.As(err, &open) {
		fmt.Println(open.State, "retry in", open.RetryAt.Sub(now))
	}
	probe, _ := b.Allow(now.Add(5 * time.Second))
	probe.Record(now.Add(6*time.Second), true)
	fmt.Println(b.State())
	// Output:
	// open retry in 5s
	// closed
}
