//go:build race

package bench_test

// raceEnabled: the race detector is on (SQLite under it is slow enough
// that the scale tests' local runs do not drain in minutes).
const raceEnabled = true
