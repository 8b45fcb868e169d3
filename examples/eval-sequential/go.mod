// This module only keeps the task set's Go files (the base repository,
// the scripted agents' output and the hidden checks) out of apiary's own
// module; nothing here is built from this directory.
module example.com/calc-evalset

go 1.22
