package runview

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// SimReport reads the run directory dir (ROOT/.apiary/runs/RUN_ID) as the
// JSON report that `apiary sim calibrate` reads: the report as `apiary
// status --json` prints it, plus each task's dependencies (from the run's
// plan) and the run's max_parallel (from its record).
func SimReport(dir string) ([]byte, error) {
	path := dir
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	id, runsDir := filepath.Base(abs), filepath.Dir(abs)
	if filepath.Base(runsDir) != "runs" || filepath.Base(filepath.Dir(runsDir)) != rundir.StateDir {
		return nil, fmt.Errorf("%s: a directory REPORT must be a run directory, %s/runs/RUN_ID", path, rundir.StateDir)
	}
	root := filepath.Dir(filepath.Dir(runsDir))
	rep, err := runs.LoadReport(root, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rd := rundir.Open(root, id)
	rec, err := rd.Record()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	deps := map[string][]string{}
	if pl, err := rd.ParsePlan(rec); err == nil && pl != nil {
		for _, t := range pl.Tasks {
			for _, d := range t.Deps {
				deps[t.ID] = append(deps[t.ID], d.Task)
			}
		}
	}
	// The report as `apiary status --json` prints it, plus what the
	// simulator needs from run.json and the plan.
	type task struct {
		runs.TaskReport
		Deps []string `json:"deps,omitempty"`
	}
	doc := struct {
		*runs.Report
		Tasks       []task `json:"tasks"`
		MaxParallel int    `json:"max_parallel"`
	}{Report: rep, MaxParallel: rec.Options.MaxParallel}
	for _, t := range rep.Tasks {
		doc.Tasks = append(doc.Tasks, task{TaskReport: t, Deps: deps[t.ID]})
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return data, nil
}
