package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apiary-dev/apiary/internal/plan"
)

// scriptedAgent is the command agents' entry point: it plays a coding
// agent by working for a while and then copying the files prepared for its
// arm and task into its worktree. A reconciler (APIARY_ROLE=reconciler)
// re-applies the task's files on the head it is given.
const scriptedAgent = `#!/bin/sh
# apiary eval scripted agent: writes the files prepared for this task.
set -e
here=$(dirname "$0")
src="$here/$APIARY_EVAL_ARM/$APIARY_TASK"
if [ -f "$src.delay" ]; then sleep "$(cat "$src.delay")"; fi
if [ -d "$src" ]; then cp -R "$src/." .; fi
`

// WriteScriptedAgents lays out the task set's scripted agents under dir
// (created) as command agents and returns their profile: for each arm and
// plan task, the files to write and how long to work first
// (scripted.delay_s per task; the single agent's is the sum).
func WriteScriptedAgents(ts *TaskSet, dir string) (plan.Agent, error) {
	for _, arm := range []Arm{Single, Swarm} {
		files, err := ts.ScriptedFiles(arm)
		if err != nil {
			return plan.Agent{}, err
		}
		for task, fs := range files {
			root := filepath.Join(dir, string(arm), task)
			if err := os.MkdirAll(root, 0o755); err != nil {
				return plan.Agent{}, err
			}
			for p, content := range fs {
				full := filepath.Join(root, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					return plan.Agent{}, err
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					return plan.Agent{}, err
				}
			}
			delay := ts.Scripted.DelayS
			if arm == Single {
				delay *= float64(len(ts.Tasks))
			}
			if delay > 0 {
				if err := os.WriteFile(root+".delay", []byte(strconv.FormatFloat(delay, 'f', 3, 64)+"\n"), 0o644); err != nil {
					return plan.Agent{}, err
				}
			}
		}
	}
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte(scriptedAgent), 0o755); err != nil {
		return plan.Agent{}, err
	}
	return plan.Agent{Kind: "command", Argv: []string{"sh", script},
		Description: fmt.Sprintf("scripted agent of task set %s", ts.Name)}, nil
}
