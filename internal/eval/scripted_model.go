package eval

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/apiary-dev/apiary/internal/llmfake"
)

// ScriptedModel is the model of the task set's scripted agents: llmfake
// scripts for Claude Code, where the attempt of each plan task of each arm
// (told apart by its prompt, which names the task) follows the task's
// ScriptedSteps — a Read or a Write per turn — then answers; every request
// waits scripted.turn_s first, as a model would think.
func ScriptedModel(ts *TaskSet, seed uint64) (*llmfake.Server, error) {
	if ts.Scripted == nil {
		return nil, fmt.Errorf("%w: %s: no scripted agents (scripted: single, swarm)", ErrTaskSet, ts.Dir)
	}
	type call struct {
		Name  string         `json:"name"`
		Input map[string]any `json:"input"`
	}
	type turn struct {
		Text      string `json:"text"`
		ToolCalls []call `json:"tool_calls"`
	}
	var scripts []map[string]any
	for _, arm := range []Arm{Single, Swarm} {
		steps, err := ts.ScriptedSteps(arm)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(steps))
		for task := range steps {
			names = append(names, task)
		}
		sort.Strings(names)
		for _, task := range names {
			turns := []turn{}
			for _, st := range steps[task] {
				if st.Read != "" {
					turns = append(turns, turn{Text: "Reading " + st.Read + ".",
						ToolCalls: []call{{Name: "Read", Input: map[string]any{"file_path": "{{cwd}}/" + st.Read}}}})
					continue
				}
				turns = append(turns, turn{Text: "Writing " + st.Write + ".",
					ToolCalls: []call{{Name: "Write", Input: map[string]any{"file_path": "{{cwd}}/" + st.Write, "content": st.Content}}}})
			}
			if len(turns) == 0 {
				turns = append(turns, turn{Text: "Nothing to change."})
			}
			scripts = append(scripts, map[string]any{"name": string(arm) + "-" + task,
				"match": map[string]any{"user": fmt.Sprintf("You are apiary task %q", task)}, "turns": turns, "final": "Done: " + task + "."})
		}
	}
	doc, err := json.Marshal(map[string]any{"session_key": "session", "scripts": scripts})
	if err != nil {
		return nil, err
	}
	scs, err := llmfake.ParseScripts("eval", doc)
	if err != nil {
		return nil, err
	}
	cfg := llmfake.Config{Scripts: scs}
	cfg.Faults.Latency = time.Duration(ts.Scripted.TurnS * float64(time.Second))
	return llmfake.New(cfg, llmfake.Options{Seed: seed})
}
