package sched

import "time"

// t0 is the tests' reference time.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
