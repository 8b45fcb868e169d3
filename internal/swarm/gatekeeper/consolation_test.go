package gatekeeper

import (
	"github.com/apiary-dev/apiary/internal/swarm/layout"
	"slices"
	"testing"
)

// TestConsolations: requests that lost are paired, earliest first, with
// the shard's ready tasks nobody asked for, in priority order, each with
// the first task its skills match; tasks asked for, decided, open or
// running, and speculative attempts, are not handed out.
func TestConsolations(t *testing.T) {
	ready := func(prio float64, tags ...string) layout.ReadyAt {
		return layout.ReadyAt{Note: layout.ReadyNote{Prio: prio, Tags: tags}}
	}
	g := &gatekeeper{
		ready: map[string]layout.ReadyAt{
			"asked":   ready(9),
			"decided": ready(8),
			"open":    ready(7),
			"t~1":     {Note: layout.ReadyNote{Prio: 6, Of: "t", Slot: 1}},
			"running": ready(5),
			"go-hi":   ready(4, "go"),
			"txt":     ready(3, "txt"),
			"any":     ready(2),
			"go-lo":   ready(1, "go"),
		},
		bids:    map[string]map[string]layout.BidSeen{"asked": {"k": {}}},
		decided: map[string]bool{"decided": true},
		opens:   map[string]bool{"open": true},
		running: map[string]*gkRun{"running": {token: 3}},
	}
	loser := func(worker string, rev int64, skills ...string) layout.BidSeen {
		return layout.BidSeen{Note: layout.BidNote{Worker: worker, Skills: skills}, Rev: rev}
	}
	got := g.consolations([]layout.BidSeen{
		loser("txt-late", 30, "txt"),
		loser("go-first", 10, "go"),
		loser("go-second", 20, "go"),
		loser("sql", 40, "sql"),
		loser("star", 50, "*"),
		loser("nobody", 60, "rust"),
	})
	var pairs []string
	for _, c := range got {
		pairs = append(pairs, c.bid.Note.Worker+"="+c.task)
	}
	// sql could only take an untagged task, and "any" is gone by its turn;
	// "*" matches everything; rust matches nothing left.
	want := []string{"go-first=go-hi", "go-second=any", "txt-late=txt", "star=go-lo"}
	if !slices.Equal(pairs, want) {
		t.Fatalf("consolations %v, want %v", pairs, want)
	}
}
