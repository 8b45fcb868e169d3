package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/plan"
)

// Step is one model turn of a scripted agent: it reads the file Read, or
// writes Content to the file Write (slash-separated, relative to the
// repository).
type Step struct {
	Read    string `json:"read,omitempty"`
	Write   string `json:"write,omitempty"`
	Content string `json:"-"`
}

// ScriptedSteps returns what the scripted agents of arm do, turn by turn,
// per plan task: a swarm agent reads its task's scripted reads, then
// writes its task's files (sorted); the single agent takes the tasks in
// the set's order and does the same for each, except that it reads a file
// only once and never one it wrote, and writes each of its files under the
// first task whose write scope holds it (files under none come last).
// After its steps every agent gives one final answer, a turn of its own.
func (ts *TaskSet) ScriptedSteps(arm Arm) (map[string][]Step, error) {
	files, err := ts.ScriptedFiles(arm)
	if err != nil {
		return nil, err
	}
	reads := ts.Scripted.Reads
	out := map[string][]Step{}
	if arm == Swarm {
		for _, t := range ts.Tasks {
			var steps []Step
			for _, r := range reads[t.ID] {
				steps = append(steps, Step{Read: r})
			}
			for _, p := range sortedKeys(files[t.ID]) {
				steps = append(steps, Step{Write: p, Content: files[t.ID][p]})
			}
			out[t.ID] = steps
		}
		return out, nil
	}
	own := files[SingleTaskID]
	paths := sortedKeys(own)
	known, written := map[string]bool{}, map[string]bool{} // in its context; written by it
	var steps []Step
	write := func(p string) {
		steps = append(steps, Step{Write: p, Content: own[p]})
		known[p], written[p] = true, true
	}
	for _, t := range ts.Tasks {
		for _, r := range reads[t.ID] {
			if !known[r] {
				steps = append(steps, Step{Read: r})
				known[r] = true
			}
		}
		for _, p := range paths {
			if !written[p] && slices.ContainsFunc(t.WriteScope, func(s string) bool { return gate.InScope(p, s) }) {
				write(p)
			}
		}
	}
	for _, p := range paths {
		if !written[p] {
			write(p)
		}
	}
	out[SingleTaskID] = steps
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

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
// plan task, the files to write, and how long to work first — the turns
// its steps take (ScriptedSteps, plus the final answer) times
// scripted.turn_s, as the same agent scripted through a model would.
func WriteScriptedAgents(ts *TaskSet, dir string) (plan.Agent, error) {
	for _, arm := range []Arm{Single, Swarm} {
		files, err := ts.ScriptedFiles(arm)
		if err != nil {
			return plan.Agent{}, err
		}
		steps, err := ts.ScriptedSteps(arm)
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
			if delay := float64(len(steps[task])+1) * ts.Scripted.TurnS; delay > 0 {
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
