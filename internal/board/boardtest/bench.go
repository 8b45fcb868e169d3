package boardtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

// Bench runs the board benchmarks on clients from connect (each call a new,
// independent client on one board):
//
//   - Claim: one client claims and releases task after task (claims/s).
//   - ClaimParallel: 16 goroutines of one client claim and release
//     distinct tasks (claims/s).
//   - ClaimContended: 4 clients race for every task; one wins (claims/s).
//   - WatchLatency: the time from starting a Put to its event arriving at a
//     watcher on another client (ns/op).
func Bench(b *testing.B, connect func() *board.Store) {
	i := 0 // task counter, kept across the sub-benchmarks' repeated runs
	b.Run("Claim", func(b *testing.B) {
		s := connect()
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			c, err := s.Claim(ctx, fmt.Sprint("bench-", i), "w", 1, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Release(ctx, c); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
	})
	b.Run("ClaimParallel", func(b *testing.B) {
		// 16 goroutines of one client claiming and releasing distinct tasks,
		// as the in-process workers of one host do.
		s := connect()
		ctx := b.Context()
		var next atomic.Int64
		base := i
		b.ReportAllocs()
		b.SetParallelism(8) // 16 goroutines on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				task := fmt.Sprint("parallel-", base, "-", next.Add(1))
				c, err := s.Claim(ctx, task, "w", 1, time.Minute)
				if err != nil {
					b.Error(err)
					return
				}
				if err := s.Release(ctx, c); err != nil {
					b.Error(err)
					return
				}
			}
		})
		i += int(next.Load())
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
	})
	b.Run("ClaimContended", func(b *testing.B) {
		const racers = 4
		var stores []*board.Store
		for range racers {
			stores = append(stores, connect())
		}
		ctx := b.Context()
		b.ReportAllocs()
		for b.Loop() {
			task := fmt.Sprint("contended-", i)
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins := 0
			for r, s := range stores {
				wg.Go(func() {
					_, err := s.Claim(ctx, task, fmt.Sprint("w", r), float64(r), time.Minute)
					mu.Lock()
					defer mu.Unlock()
					if err == nil {
						wins++
					}
				})
			}
			wg.Wait()
			if wins != 1 {
				b.Fatalf("%s: %d winners", task, wins)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
	})
	b.Run("WatchLatency", func(b *testing.B) {
		writer, watcher := connect(), connect()
		ctx, cancel := context.WithCancel(b.Context())
		defer cancel()
		events := watcher.Watch(ctx, "lat/", 0)
		b.ReportAllocs()
		for b.Loop() {
			rev, err := writer.Put(ctx, "lat/k", nil, board.NoLease)
			if err != nil {
				b.Fatal(err)
			}
			for got := false; !got; {
				resp, ok := <-events
				if !ok || resp.Err != nil {
					b.Fatalf("watch ended: %v", resp.Err)
				}
				for _, ev := range resp.Events {
					got = got || ev.Revision == rev
				}
			}
		}
	})
}
