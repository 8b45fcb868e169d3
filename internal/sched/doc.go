// Package sched provides the pure scheduling primitives the gateway and the
// runtime are built from: an admission Gate with a priority wait queue (aging
// and per-agent fair share), token-bucket rate limiting across several
// dimensions (Bucket, Limiter), AIMD sizing of the concurrency limit, a
// circuit Breaker, hierarchical Budgets, exponential Backoff with full jitter,
// and Credits for credit-based flow control.
//
// Time is a parameter. The state machines (Bucket, Limiter.Reserve, AIMD,
// Breaker, Backoff) take the current time as an argument and never read a
// clock, so tests and the simulator drive them with any clock they like. The
// few calls that block (Gate.Acquire, Limiter.Wait, Credits.Acquire, Sleep)
// take a context first and wait on the time package's timers, so they run
// under testing/synctest in virtual time. Randomness comes from an injected
// *rand.Rand.
//
// Every exported type is safe for concurrent use unless its documentation
// says otherwise. The package imports only the standard library and knows
// nothing of HTTP: classifying a response (which status is congestion, which
// 429 must not be retried) is the caller's job.
//
// A typical request through the gateway uses the primitives in this order,
// holding an admission slot only while the upstream call is in flight:
//
//	hold, err := budget.Reserve(estimate)           // fail fast when exhausted
//	for attempt := 0; ; attempt++ {
//		r := limiter.Reserve(time.Now(), cost)        // pace by RPM and TPM
//		err = limiter.Wait(ctx, r)                    // sleeps holding no slot
//		permit, err := breaker.Allow(time.Now())     // fail fast or wait while open
//		ticket, err := gate.Acquire(ctx, req)         // admission slot
//		resp, err := send(ctx)                        // (to the end of a stream)
//		ticket.Release()                              // before any backoff sleep
//		r.Observe(sched.InputTokens, limit, remaining, reset) // per header family
//		permit.Record(time.Now(), healthy)            // exactly once
//		aimd.Record(time.Now(), signal, ttfb)
//		r.Commit(time.Now(), actual)                  // or r.Cancel if never sent
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
