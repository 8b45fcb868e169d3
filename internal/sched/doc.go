// Package sched provides the pure scheduling primitives the gateway and the
// runtime are built from: an admission Gate with a priority wait queue (aging
// and per-agent fair share), a Pacer that paces requests by a server's rate
// limits in several dimensions, learned from its headers (the limit, its
// period, the phase of its windows) or configured, AIMD sizing of the
// concurrency limit, a circuit Breaker, hierarchical Budgets, exponential
// Backoff with full jitter, and Credits for credit-based flow control.
//
// Time is a parameter. The state machines (AIMD, Breaker, Backoff) take the
// current time as an argument and never read a clock, so tests and the
// simulator drive them with any clock they like. The calls that block
// (Gate.Acquire, Pacer.Wait, Credits.Acquire, Sleep) take a context first
// and wait on the time package's timers, so they run under testing/synctest
// in virtual time. Randomness comes from an injected *rand.Rand.
//
// Every exported type is safe for concurrent use unless its documentation
// says otherwise. The package imports only the standard library and knows
// nothing of HTTP: classifying a response (which status is congestion, which
// 429 must not be retried) and parsing rate-limit headers are the caller's
// job.
//
// A typical request through the gateway uses the primitives in this order,
// holding an admission slot only while the upstream call is in flight:
//
//	hold, err := budget.Reserve(estimate)           // fail fast when exhausted
//	for attempt := 0; ; attempt++ {
//		g, err := pacer.Wait(ctx, ask)                // queued by the rate limits, no slot held
//		permit, err := breaker.Allow(time.Now())     // fail fast or wait while open
//		ticket, err := gate.Acquire(ctx, req)         // admission slot
//		g.Sent(time.Now())
//		resp, err := send(ctx)                        // (to the end of a stream)
//		ticket.Release()                              // before any backoff sleep
//		g.Answer(time.Now(), figures, charged)        // the headers revise every wait
//		permit.Record(time.Now(), healthy)            // exactly once
//		aimd.Record(time.Now(), signal, ttfb)
//		if done {
//			break
//		}
//		d, ok := backoff.Next(attempt, retryAfter, waited)
//		if !ok {
//			break                                     // pass the error through
//		}
//		sched.Sleep(ctx, d)                           // no slot held while sleeping
//	}
//	hold.Commit(spent)
package sched
