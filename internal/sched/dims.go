package sched

import "time"

// Dim names one dimension of a rate limit.
type Dim uint8

// The dimensions a Pacer meters. TotalTokens is input plus output.
const (
	Requests Dim = iota
	InputTokens
	OutputTokens
	TotalTokens
	numDims
)

func (d Dim) String() string {
	switch d {
	case Requests:
		return "requests"
	case InputTokens:
		return "input_tokens"
	case OutputTokens:
		return "output_tokens"
	case TotalTokens:
		return "tokens"
	}
	return "unknown"
}

// Cost is what one request consumes.
type Cost struct {
	Requests int64
	Input    int64
	Output   int64
}

func (c Cost) of(d Dim) int64 {
	switch d {
	case Requests:
		return c.Requests
	case InputTokens:
		return c.Input
	case OutputTokens:
		return c.Output
	}
	return c.Input + c.Output
}

// Rate is a limit per period, such as 50 requests per minute.
type Rate struct {
	// Limit is the capacity per Per; 0 means unlimited (or not yet known).
	Limit int64
	// Per is the window; 0 means one minute (RPM, TPM).
	Per time.Duration
}
