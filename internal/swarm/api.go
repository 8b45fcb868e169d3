package swarm

import (
	"context"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// The run record, the merge role's options, a worker's record and the
// errors of swarm mode live with the board layout in package layout; these
// are their names here, where the callers of Publish, RunHost and Run look.

type (
	Record       = layout.Record
	Options      = layout.Options
	MergeOptions = layout.MergeOptions
	DupPolicy    = layout.DupPolicy
	Candidate    = layout.Candidate
	AttemptSpend = layout.AttemptSpend
	WorkerRecord = layout.WorkerRecord
	History      = layout.History
	TagStat      = layout.TagStat
)

// Run statuses, duplicate policies and kinds.
const (
	RunActive   = layout.RunActive
	RunFinished = layout.RunFinished

	DupWarn   = layout.DupWarn
	DupReject = layout.DupReject
	DupReuse  = layout.DupReuse
	DupExact  = layout.DupExact
	DupNear   = layout.DupNear
)

// Errors of swarm mode; test with errors.Is.
var (
	ErrConfig = layout.ErrConfig
	ErrBadRun = layout.ErrBadRun
	ErrNoRun  = layout.ErrNoRun
	ErrLost   = layout.ErrLost
)

// ReadRecord returns run's record; ErrNoRun if the board has none.
func ReadRecord(ctx context.Context, st *board.Store, run string) (*Record, error) {
	return layout.ReadRecord(ctx, st, run)
}

// ListRecords returns every run recorded on the board, oldest first.
func ListRecords(ctx context.Context, st *board.Store) ([]*Record, error) {
	return layout.ListRecords(ctx, st)
}

// Competence scores (0–1) how well a worker with skills, profile and
// history fits a task with tags asking for agent (see layout.Competence).
func Competence(skills []string, profile string, h History, tags []string, agent string) float64 {
	return layout.Competence(skills, profile, h, tags, agent)
}

// Matches reports whether a worker with skills should ask for a task with
// tags at all (see layout.Matches).
func Matches(skills, tags []string) bool { return layout.Matches(skills, tags) }
