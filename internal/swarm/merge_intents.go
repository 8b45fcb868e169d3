package swarm

import (
	"path"
	"slices"
	"sort"
	"strings"
)

// Intent compaction: once the intent log of a run holds more than share of
// its task count (and at least minCompact records), the records of
// integrated tasks are folded into patterns — directory and change kinds,
// with a count and the tasks — and archived.

const minCompact = 8

// compactDue reports whether a run's intent log should be compacted.
func compactDue(logged, tasks int, share float64) bool {
	return logged >= minCompact && float64(logged) > share*float64(tasks)
}

// IntentPattern is an archived summary of similar intents.
type IntentPattern struct {
	Dir     string   `json:"dir"`
	Changes []string `json:"changes"`
	Count   int      `json:"count"`
	Tasks   []string `json:"tasks"`
}

// loggedIntent is one intent-log record.
type loggedIntent struct {
	Task    string   `json:"task"`
	Files   []string `json:"files"`
	Changes []string `json:"changes"`
}

// patternKey is the directory and change kinds that group intents.
func patternKey(in loggedIntent) (dir string, changes []string) {
	dirs := make([]string, 0, len(in.Files))
	for _, f := range in.Files {
		if d, ok := strings.CutSuffix(f, "/"); ok {
			dirs = append(dirs, path.Clean(d))
		} else {
			dirs = append(dirs, path.Dir(f))
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	dir = "."
	if len(dirs) > 0 {
		dir = dirs[0]
		for _, d := range dirs[1:] {
			for !within(d, dir) {
				dir = path.Dir(dir)
			}
		}
	}
	changes = slices.Clone(in.Changes)
	slices.Sort(changes)
	return dir, slices.Compact(changes)
}

func within(p, dir string) bool { return dir == "." || p == dir || strings.HasPrefix(p, dir+"/") }

// compactIntents groups intents into patterns, largest first.
func compactIntents(ins []loggedIntent) []IntentPattern {
	by := map[string]*IntentPattern{}
	for _, in := range ins {
		dir, ch := patternKey(in)
		k := dir + "\x00" + strings.Join(ch, ",")
		p := by[k]
		if p == nil {
			p = &IntentPattern{Dir: dir, Changes: ch}
			by[k] = p
		}
		p.Count++
		p.Tasks = append(p.Tasks, in.Task)
	}
	out := make([]IntentPattern, 0, len(by))
	for _, p := range by {
		slices.Sort(p.Tasks)
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Dir < out[j].Dir
	})
	return out
}
