package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// flowAgent: p emits three children without waiting for them; each child
// records how many of its siblings are running when it starts, runs a
// while (with ALL set: until all three have started) and stops.
const flowAgent = `
case "$APIARY_TASK" in
p) mkdir -p out
   for k in 0 1 2; do spawn "k$k" "out/k$k/" false "out/k$k.json"; done ;;
*) touch "$FLAGS/running.$APIARY_TASK"
   ls "$FLAGS" | grep -c '^running\.' >> "$FLAGS/seen"
   if [ -n "$ALL" ]; then
     while [ "$(wc -l < "$FLAGS/seen")" -lt 3 ]; do sleep 0.02; done
   else
     sleep 0.3
   fi
   rm "$FLAGS/running.$APIARY_TASK"
   mkdir -p "out/$APIARY_TASK" && echo ok > "out/$APIARY_TASK/done" ;;
esac
`

// TestSpawnCredits: with a credit window of one, a producer's second
// emission blocks until its first child is done, so its children never run
// side by side (with the default window of four they would: the children
// run outside max_parallel).
func TestSpawnCredits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		window  int
		overlap bool
		all     string
	}{{1, false, ""}, {4, true, "1"}} {
		t.Run(strings.Repeat("w", tc.window), func(t *testing.T) {
			t.Parallel()
			repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
			flags := t.TempDir()
			script := agentScript(t, flowAgent)
			src := `version: 1
agents:
  sh: {kind: command, argv: ["sh", "` + script + `"], env: {FLAGS: "` + flags + `", ALL: "` + tc.all + `"}}
tasks:
  - {id: p, objective: produce, agent: sh, write_scope: [out/]}
`
			rep := start(t, repo, src, Config{SpawnWindow: tc.window})
			if !rep.OK() || len(rep.Tasks) != 4 {
				t.Fatalf("run %s: %+v", rep.Status, rep.Tasks)
			}
			b, err := os.ReadFile(filepath.Join(flags, "seen"))
			if err != nil {
				t.Fatal(err)
			}
			seen := strings.Fields(string(b))
			overlap := false
			for _, s := range seen {
				overlap = overlap || s != "1"
			}
			if len(seen) != 3 || overlap != tc.overlap {
				t.Errorf("window %d: siblings running at each start %v", tc.window, seen)
			}
		})
	}
}
