package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/apiary-dev/apiary/internal/supervise"
)

// TestWriteReap: each removal is a line saying what was (or would be)
// done, a checkout being brought along; JSON carries the same with the
// error; an empty report says so, and is [] in JSON.
func TestWriteReap(t *testing.T) {
	t.Parallel()
	rep := supervise.ReapReport{Removed: []supervise.Removal{
		{Item: supervise.Item{Kind: supervise.KindWorktree, ID: "/w/a", Owner: "r1"}},
		{Item: supervise.Item{Kind: supervise.KindBranch, ID: "apiary/r1/a", Owner: "r1"}, DryRun: true},
		{Item: supervise.Item{Kind: supervise.KindCheckout, ID: "/repo", Owner: "r1"}, Err: errors.New("busy")},
	}}
	var text bytes.Buffer
	if err := WriteReapText(&text, rep); err != nil {
		t.Fatal(err)
	}
	want := "removed worktree /w/a (run r1)\nwould remove branch apiary/r1/a (run r1)\nfailed to bring along checkout /repo (run r1): busy\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	var js bytes.Buffer
	if err := WriteReapJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var lines []reapLine
	if err := json.Unmarshal(js.Bytes(), &lines); err != nil || len(lines) != 3 || !lines[1].DryRun || lines[2].Error != "busy" || lines[0].Run != "r1" {
		t.Errorf("JSON %s: %v", js.String(), err)
	}
	text.Reset()
	js.Reset()
	if err := WriteReapText(&text, supervise.ReapReport{}); err != nil || text.String() != "nothing to reap\n" {
		t.Errorf("empty: %q %v", text.String(), err)
	}
	if err := WriteReapJSON(&js, supervise.ReapReport{}); err != nil || js.String() != "[]\n" {
		t.Errorf("empty JSON: %q %v", js.String(), err)
	}
}
