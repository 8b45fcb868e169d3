package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apiary-dev/apiary/internal/swarm"
)

// TestMergeFlagsOverConfig: the merge policy is apiary.yaml's swarm.merge
// section with the flags given put over it; the plan's merge: section only
// fills what neither sets (swarm.Publish, tested there).
func TestMergeFlagsOverConfig(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "apiary.yaml")
	if err := os.WriteFile(cfg, []byte("swarm:\n  merge: {on_exact: reject, near_dup: 0.9, hot_touches: 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want swarm.MergeOptions
	}{
		{[]string{"--config", cfg}, swarm.MergeOptions{OnExact: swarm.DupReject, NearDup: 0.9, HotTouches: 5}},
		{[]string{"--config", cfg, "--on-exact", "reuse", "--on-near", "reject", "--hot-touches", "2", "--no-split"},
			swarm.MergeOptions{OnExact: swarm.DupReuse, OnNear: swarm.DupReject, NearDup: 0.9, HotTouches: 2, NoSplit: true}},
		{[]string{"--config", filepath.Join(t.TempDir(), "empty.yaml"), "--near-dup", "0.7"}, swarm.MergeOptions{}},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f mergeFlags
		addMergeFlags(fs, &f, "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		got, err := f.options()
		if tt.want == (swarm.MergeOptions{}) {
			if err == nil {
				t.Errorf("%v: a missing --config file: no error", tt.args)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v: %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
}
