package agent

import "time"

// Result is what one attempt did, as seen from outside the agent.
type Result struct {
	// Exit is the exit code; -1 when the process was ended by a signal.
	Exit int
	// Signal names the signal that ended the process, if any.
	Signal string
	// Cancelled is set when the attempt was stopped because ctx ended.
	Cancelled bool
	Wall      time.Duration
	// Stragglers is how many processes the agent left running when it
	// exited (all of them were then stopped).
	Stragglers int
	// Report is the CLI's own final report, nil if it printed none (a crash,
	// a kill, or a kind that reports nothing).
	Report *Report
}

// DefaultGrace is the time between SIGTERM and SIGKILL when Spec.Grace is 0.
const DefaultGrace = 5 * time.Second

// maxLine bounds the bytes kept for one output line; longer lines are logged
// but not parsed.
const maxLine = 4 << 20
