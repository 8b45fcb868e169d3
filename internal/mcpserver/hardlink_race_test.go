//go:build unix

package mcpserver_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hardLinkRaceDuration is how long TestHardLinkSwapRace attacks.
const hardLinkRaceDuration = 10*time.Second + 500*time.Millisecond

// TestHardLinkSwapRace: while an attacker in the workspace keeps swapping
// files — the ones the tools read, a chunk part in the state directory, a
// move's source — between ordinary inside files and hard links to a file
// outside the workspace, three real `apiary mcp` servers run every tool that
// reads content against them (rw.read as text and base64, rw.stat's hash,
// rw.search, rw.edit's dry-run diff, appends, rw.chunk_preview and compose,
// rw.move, rw.handoff_read) for over ten seconds. No response carries a
// byte of the outside file (its text, its base64 or its SHA-256), no file
// inside ever receives its content, and the outside file is never written.
func TestHardLinkSwapRace(t *testing.T) {
	t.Parallel()
	ws := workspaceDir(t)
	outside := filepath.Join(filepath.Dir(ws), "outside-secret.txt")
	tok := make([]byte, 16)
	rand.Read(tok)
	marker := "OUTSIDE-SECRET-" + hex.EncodeToString(tok)
	secret := strings.Repeat(marker+"\n", 4)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(outside, []byte(secret), 0o644))
	forbidden := []string{marker, sha(secret), base64.StdEncoding.EncodeToString([]byte(secret))[:40]}
	for i := range 3 {
		// the marker at every base64 alignment
		forbidden = append(forbidden, base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", i) + marker))[4:36])
	}

	f := startFleet(t, ws, 3, 0)
	must(os.MkdirAll(filepath.Join(ws, "dir"), 0o755))
	f.call(0, "rw.chunk_write", map[string]any{"session": "s", "index": 1, "content": "inside part one\n"})
	f.call(0, "rw.chunk_write", map[string]any{"session": "s", "index": 2, "content": "inside part two\n"})
	handoff := "---\ntask_id: t\nstatus: partial\nagent: a\nsummary: inside\nnext_steps: []\nlast_good_state: []\n---\n\ninside body\n"

	// The attacker: each victim alternates between an inside file and a
	// hard link to the outside file, swapped in by rename so it is always
	// one or the other.
	victims := map[string]string{
		"victim.txt":                            "inside victim text\n",
		"dir/a.txt":                             "inside searched text\n",
		"app.txt":                               "inside append base\n",
		"HANDOFF.md":                            handoff,
		"mv.txt":                                "inside move source\n",
		".apiary/durable/chunks/s/part-001.txt": "inside part one\n",
	}
	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	for rel, inside := range victims {
		wg.Go(func() {
			p := filepath.Join(ws, rel)
			tmp := filepath.Join(filepath.Dir(p), ".attack-"+filepath.Base(p))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				os.Remove(tmp)
				var err error
				if n%2 == 0 {
					err = os.Link(outside, tmp)
				} else {
					err = os.WriteFile(tmp, []byte(inside), 0o644)
				}
				if err == nil && os.Rename(tmp, p) == nil {
					swaps.Add(1)
				}
			}
		})
	}

	type probe struct {
		tool string
		args func(n int) map[string]any
	}
	probes := []probe{
		{"rw.read", func(int) map[string]any { return map[string]any{"path": "victim.txt"} }},
		{"rw.read", func(int) map[string]any { return map[string]any{"path": "victim.txt", "encoding": "base64"} }},
		{"rw.read", func(int) map[string]any { return map[string]any{"path": "dir/a.txt", "head": 1} }},
		{"rw.stat", func(int) map[string]any { return map[string]any{"path": "victim.txt"} }},
		{"rw.search", func(int) map[string]any { return map[string]any{"pattern": "SECRET|inside", "regex": true} }},
		{"rw.search", func(int) map[string]any { return map[string]any{"pattern": ".", "regex": true, "path": "dir"} }},
		{"rw.edit", func(int) map[string]any {
			return map[string]any{"path": "victim.txt", "old_string": "victim", "new_string": "VICTIM", "dry_run": true}
		}},
		{"rw.edit", func(int) map[string]any {
			return map[string]any{"path": "victim.txt", "old_string": "OUTSIDE", "new_string": "x", "dry_run": true}
		}},
		{"rw.safe_write", func(n int) map[string]any {
			return map[string]any{"path": "app.txt", "content": fmt.Sprintf("appended %d\n", n), "mode": "append"}
		}},
		{"rw.chunk_preview", func(int) map[string]any { return map[string]any{"session": "s"} }},
		{"rw.chunk_compose", func(int) map[string]any { return map[string]any{"session": "s", "output_path": "composed.txt"} }},
		{"rw.move", func(n int) map[string]any {
			return map[string]any{"from": "mv.txt", "to": fmt.Sprintf("moved/%d.txt", n)}
		}},
		{"rw.handoff_read", func(int) map[string]any { return map[string]any{} }},
	}
	var calls, refusals, leaks atomic.Int64
	deadline := time.Now().Add(hardLinkRaceDuration)
	var clients sync.WaitGroup
	for i := range f.cs {
		clients.Go(func() {
			for n := i; time.Now().Before(deadline); n++ {
				p := probes[n%len(probes)]
				res, err := f.cs[i].CallTool(t.Context(), &mcp.CallToolParams{Name: p.tool, Arguments: p.args(n)})
				if err != nil {
					t.Errorf("%s: %v", p.tool, err)
					return
				}
				calls.Add(1)
				text := res.Content[0].(*mcp.TextContent).Text
				if strings.Contains(text, "hard_link_refused") {
					refusals.Add(1)
				}
				for _, bad := range forbidden {
					if strings.Contains(text, bad) {
						leaks.Add(1)
						t.Errorf("%s %v returned outside content: %.300s", p.tool, p.args(n), text)
						break
					}
				}
			}
		})
	}
	clients.Wait()
	close(stop)
	wg.Wait()

	// Nothing inside received the outside content (a hard link to the
	// outside file itself, left by the attacker, is not a copy).
	sfi, _ := os.Stat(outside)
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, sfi) {
			return nil
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
			t.Errorf("%s holds a copy of the outside content", p)
		}
		return nil
	})
	if b, _ := os.ReadFile(outside); string(b) != secret {
		t.Fatalf("the outside file was written")
	}
	t.Logf("%d tool calls during %d swaps: %d hard-link refusals, %d responses with outside content", calls.Load(), swaps.Load(), refusals.Load(), leaks.Load())
	if refusals.Load() == 0 {
		t.Fatal("no call ever met a hard link: the race was not exercised")
	}
}
