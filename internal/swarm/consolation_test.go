package swarm

import (
	"slices"
	"testing"
)

// TestConsolations: requests that lost are paired, earliest first, with
// the shard's ready tasks nobody asked for, in priority order, each with
// the first task its skills match; tasks asked for, decided, open, granted
// or running are not handed out.
func TestConsolations(t *testing.T) {
	ready := func(prio float64, tags ...string) gkReady { return gkReady{note: readyNote{Prio: prio, Tags: tags}} }
	g := &gatekeeper{
		ready: map[string]gkReady{
			"asked":   ready(9),
			"decided": ready(8),
			"open":    ready(7),
			"granted": ready(6),
			"running": ready(5),
			"go-hi":   ready(4, "go"),
			"txt":     ready(3, "txt"),
			"any":     ready(2),
			"go-lo":   ready(1, "go"),
		},
		bids:    map[string]map[string]bidSeen{"asked": {"k": {}}},
		decided: map[string]bool{"decided": true},
		opens:   map[string]bool{"open": true},
		grants:  map[string]int64{"granted": 7},
		running: map[string]int64{"running": 3},
	}
	loser := func(worker string, rev int64, skills ...string) bidSeen {
		return bidSeen{note: bidNote{Worker: worker, Skills: skills}, rev: rev}
	}
	got := g.consolations([]bidSeen{
		loser("txt-late", 30, "txt"),
		loser("go-first", 10, "go"),
		loser("go-second", 20, "go"),
		loser("sql", 40, "sql"),
		loser("star", 50, "*"),
		loser("nobody", 60, "rust"),
	})
	var pairs []string
	for _, c := range got {
		pairs = append(pairs, c.bid.note.Worker+"="+c.task)
	}
	// sql could only take an untagged task, and "any" is gone by its turn;
	// "*" matches everything; rust matches nothing left.
	want := []string{"go-first=go-hi", "go-second=any", "txt-late=txt", "star=go-lo"}
	if !slices.Equal(pairs, want) {
		t.Fatalf("consolations %v, want %v", pairs, want)
	}
}
