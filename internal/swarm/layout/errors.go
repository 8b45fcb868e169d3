package layout

import "errors"

// Errors of swarm mode; test with errors.Is.
var (
	// ErrConfig: an option or argument is missing or invalid.
	ErrConfig = errors.New("invalid swarm configuration")
	// ErrBadRun: a run's state on the board is unreadable or inconsistent.
	ErrBadRun = errors.New("corrupt swarm run state")
)
