package layout

import (
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/swarm/policy"
)

// A claim request ("bid") names the task, the worker and the worker's
// competence score for it. It goes to the task's shard gatekeeper, which
// waits a short bid window for competing requests and grants the task to
// the highest score, ties going to the earliest request (the smallest
// revision of its key). The winner then takes the board claim — a lease
// with a fencing token — and marks the task running under it.

// TagStat counts a worker's finished attempts on tasks with one tag.
type TagStat struct {
	Done   int `json:"done"`
	Failed int `json:"failed"`
}

// History is a worker's record of finished attempts, overall and by tag.
type History struct {
	Done   int                `json:"done"`
	Failed int                `json:"failed"`
	Tags   map[string]TagStat `json:"tags,omitempty"`
}

// Record adds one finished attempt on a task with tags.
func (h *History) Record(tags []string, ok bool) {
	if h.Tags == nil {
		h.Tags = map[string]TagStat{}
	}
	if ok {
		h.Done++
	} else {
		h.Failed++
	}
	for _, t := range tags {
		s := h.Tags[t]
		if ok {
			s.Done++
		} else {
			s.Failed++
		}
		h.Tags[t] = s
	}
}

// successRate is the Laplace-smoothed success rate on tasks with tags (all
// tasks when tags is empty): 0.5 with no history.
func (h History) successRate(tags []string) float64 {
	done, failed := h.Done, h.Failed
	if len(tags) > 0 {
		done, failed = 0, 0
		for _, t := range tags {
			done += h.Tags[t].Done
			failed += h.Tags[t].Failed
		}
	}
	return float64(done+1) / float64(done+failed+2)
}

// WorkerRecord is a live worker's entry on the board, bound to its host's
// lease: it vanishes when the worker's process does.
type WorkerRecord struct {
	Worker  string   `json:"worker"`
	Host    string   `json:"host"`
	Skills  []string `json:"skills,omitempty"`
	Profile string   `json:"profile,omitempty"`
	Slots   int      `json:"slots"`
	Busy    int      `json:"busy"`
	// Idle counts free slots the worker is not asking work for (it found
	// no ready task it matches, or its policy held it back): only such
	// slots receive the watchdog's offers.
	Idle    int     `json:"idle"`
	History History `json:"history"`
	// Load is the CPU load the worker published (0–1) when its policy made
	// it yield; Observing is set while it only reads.
	Load      float64         `json:"load,omitempty"`
	Observing bool            `json:"observing,omitempty"`
	Scores    []policy.Scores `json:"scores,omitempty"` // its latest policy scores, one per kind
	Updated   time.Time       `json:"updated"`
}

// Competence weights: skills against tags dominate, the worker's record on
// such tasks refines, and a task asking for the worker's own agent profile
// tips the balance.
const (
	weightSkill   = 0.6
	weightHistory = 0.3
	weightProfile = 0.1
)

// Competence scores (0–1) how well a worker with skills, profile and
// history fits a task with tags asking for agent: the fraction of the tags
// the worker has (0.5 for an untagged task), its smoothed success rate on
// such tasks, and whether the task's agent is the worker's profile.
func Competence(skills []string, profile string, h History, tags []string, agent string) float64 {
	skill := 0.5
	if len(tags) > 0 {
		n := 0
		for _, t := range tags {
			if hasSkill(skills, t) {
				n++
			}
		}
		skill = float64(n) / float64(len(tags))
	}
	s := weightSkill*skill + weightHistory*h.successRate(tags)
	if agent != "" && agent == profile {
		s += weightProfile
	}
	return s
}

// Matches reports whether a worker with skills should ask for a task with
// tags at all: it has one of them, or the task has none. Tasks nobody
// matches are left to the watchdog.
func Matches(skills, tags []string) bool {
	if len(tags) == 0 {
		return true
	}
	for _, t := range tags {
		if hasSkill(skills, t) {
			return true
		}
	}
	return false
}

func hasSkill(skills []string, tag string) bool {
	return slices.ContainsFunc(skills, func(s string) bool { return strings.EqualFold(s, tag) || s == "*" })
}

// better reports whether bid a beats bid b: a higher score, or an equal
// score asked earlier.
func better(a, b BidSeen) bool {
	if a.Note.Score != b.Note.Score {
		return a.Note.Score > b.Note.Score
	}
	return a.Rev < b.Rev
}

// BidSeen is a bid as a gatekeeper saw it.
type BidSeen struct {
	Note  BidNote
	Key   string
	Rev   int64 // the bid key's CreateRevision: its arrival
	Lease int64
}

// Winner picks the best of bids; ok is false when there are none.
func Winner(bids []BidSeen) (best BidSeen, ok bool) {
	for i, b := range bids {
		if i == 0 || better(b, best) {
			best, ok = b, true
		}
	}
	return best, ok
}
