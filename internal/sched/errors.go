package sched

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Typed errors below wrap them, so errors.Is works on either.
var (
	// ErrQueueFull is returned by Gate.Acquire when the wait queue is at its
	// bound; the caller should answer at once (with a retry-after) rather
	// than queue.
	ErrQueueFull = errors.New("sched: admission queue full")
	// ErrOpen is wrapped by *OpenError, returned by Breaker.Allow while the
	// circuit refuses requests.
	ErrOpen = errors.New("sched: circuit open")
	// ErrBudgetExhausted is wrapped by *ExhaustedError, returned when a
	// reservation or carve-out does not fit in a Budget.
	ErrBudgetExhausted = errors.New("sched: budget exhausted")
	// ErrClosed is returned by operations on a closed Credits or Budget.
	ErrClosed = errors.New("sched: closed")
	// ErrInvalid reports an argument outside its documented domain.
	ErrInvalid = errors.New("sched: invalid argument")
)

// OpenError is the error Breaker.Allow returns while it refuses requests.
type OpenError struct {
	// State is the breaker's state: Open, or HalfOpen with every probe slot
	// taken.
	State State
	// RetryAt is the earliest time a new Allow may succeed. While open it is
	// exact (the end of the open interval); while half-open it is a hint.
	RetryAt time.Time
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("sched: circuit %s until %s", e.State, e.RetryAt.Format(time.RFC3339Nano))
}

// Unwrap returns ErrOpen.
func (e *OpenError) Unwrap() error { return ErrOpen }

// ExhaustedError is returned when an amount does not fit in a Budget. The
// fields are a snapshot taken when the request was refused.
type ExhaustedError struct {
	Limit     int64 // the budget's limit
	Spent     int64 // committed spend, including settled children
	Reserved  int64 // outstanding holds plus the limits of open children
	Requested int64 // the amount that did not fit
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("sched: budget exhausted: requested %d, limit %d, spent %d, reserved %d",
		e.Requested, e.Limit, e.Spent, e.Reserved)
}

// Unwrap returns ErrBudgetExhausted.
func (e *ExhaustedError) Unwrap() error { return ErrBudgetExhausted }
