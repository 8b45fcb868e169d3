//go:build unix

package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// crashState is what the test knows about the writes it sent.
type crashState struct {
	mu        sync.Mutex
	versions  map[string][]string  // path → SHA-256 of every version sent, in order
	acked     map[string][2]string // journal_id → {path, sha256} of acknowledged writes
	sent      int
	recovered int // journal rows marked recovered
}

// TestCrashLoop is checklist item O6 of the reference. The writer
// is the real `apiary mcp` process; its acknowledgements are the tool
// results it writes on its stdout pipe. The test SIGKILLs it at random
// points (after a random number of acks plus a random delay, with four
// writes in flight) until 1,000 writes of sizes from 12 bytes to 128 KiB
// have been sent, restarting it each time. After every restart: no temp
// file is left, every file is exactly one of the versions sent for it (never
// torn), every file is exactly its last journaled version (a write that
// landed before its writer died, journal row not yet appended, was journaled
// by the restarted server, marked recovered), and every acknowledged write
// has its journal row with the same path and hash.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	ws := workspaceDir(t)
	st := &crashState{versions: map[string][]string{}, acked: map[string][2]string{}}
	sizes := []int{12, 100, 1 << 10, 4 << 10, 32 << 10, 128 << 10}
	restarts := 0
	for st.sent < 1000 {
		killAfter := 5 + rng.IntN(60)
		delay := time.Duration(rng.IntN(3000)) * time.Microsecond
		crashRound(t, ws, st, rng.Uint64(), sizes, killAfter, delay)
		restarts++
		verifyCrash(t, ws, st, true)
	}
	t.Logf("%d writes sent, %d acknowledged, %d SIGKILLs, %d writes journaled by recovery", st.sent, len(st.acked), restarts, st.recovered)
}

// crashRound starts the server (which sweeps and reconciles), runs four
// writers with disjoint paths and SIGKILLs the server after killAfter acks
// and delay.
func crashRound(t *testing.T, ws string, st *crashState, seed uint64, sizes []int, killAfter int, delay time.Duration) {
	cmd := apiaryCmd(t, ws, srvOpts{}, "mcp")
	client := mcp.NewClient(&mcp.Implementation{Name: "crash", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	// The server swept and reconciled before answering: check now.
	verifyCrash(t, ws, st, false)
	var acks sync.WaitGroup
	acks.Add(killAfter)
	var once sync.Once
	killed := make(chan struct{})
	go func() {
		acks.Wait()
		time.Sleep(delay)
		once.Do(func() { cmd.Process.Signal(syscall.SIGKILL); close(killed) })
	}()
	var wg sync.WaitGroup
	left := killAfter
	for w := range 4 {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for {
				p := fmt.Sprintf("w%d/f%d.txt", w, rng.IntN(5))
				if rng.IntN(2) == 0 {
					p = fmt.Sprintf("d%d/sub/f%d.bin", w, rng.IntN(3))
				}
				st.mu.Lock()
				if st.sent >= 1000+16 {
					st.mu.Unlock()
					return
				}
				v := len(st.versions[p])
				content := crashContent(p, v, sizes[rng.IntN(len(sizes))])
				st.versions[p] = append(st.versions[p], sha(content))
				st.sent++
				st.mu.Unlock()
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "rw.safe_write", Arguments: map[string]any{"path": p, "content": content, "mode": "overwrite"}})
				if err != nil {
					return // the server is gone
				}
				var r map[string]any
				json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &r)
				if r["ok"] != true {
					t.Errorf("write %s failed: %v", p, r)
					return
				}
				st.mu.Lock()
				st.acked[r["journal_id"].(string)] = [2]string{p, r["sha256"].(string)}
				st.mu.Unlock()
				st.mu.Lock()
				if left > 0 {
					left--
					acks.Done()
				}
				st.mu.Unlock()
			}
		})
	}
	wg.Wait()
	st.mu.Lock()
	for ; left > 0; left-- {
		acks.Done() // writers stopped early (the 1,000 are sent): kill anyway
	}
	st.mu.Unlock()
	<-killed
	cs.Close()
}

// crashContent is version v of path p, n ≥ 12 bytes long; the leading
// version number makes every version distinct.
func crashContent(p string, v, n int) string {
	unit := fmt.Sprintf("%08d %s;", v, p)
	s := strings.Repeat(unit, n/len(unit)+1)
	return s[:n]
}

// verifyCrash checks the workspace against what was sent and acknowledged.
// Temp files are only forbidden after a restart (swept).
func verifyCrash(t *testing.T, ws string, st *crashState, allowTemps bool) {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(ws, ".apiary/durable/journal.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lastRow := map[string]int{} // path → version index of its last journal row
	ids := map[string][2]string{}
	st.recovered = 0
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			if i == len(lines)-1 && allowTemps {
				continue // torn final append, repaired on the next start
			}
			t.Fatalf("journal line %d corrupt: %q", i, line)
		}
		p, h := row["path"].(string), row["sha256"].(string)
		ids[row["journal_id"].(string)] = [2]string{p, h}
		if row["recovered"] == true {
			st.recovered++
		}
		k := slices.Index(st.versions[p], h)
		if k < 0 {
			t.Fatalf("journal row for %s names a hash never sent", p)
		}
		lastRow[p] = max(lastRow[p], k)
	}
	for id, want := range st.acked {
		if ids[id] != want {
			t.Fatalf("acknowledged write %s %v has no journal row (got %v)", id, want, ids[id])
		}
	}
	filepath.WalkDir(ws, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(ws, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, ".apiary/") {
			return nil
		}
		if strings.Contains(d.Name(), ".tmp.") {
			if !allowTemps {
				t.Errorf("temp file survived the restart: %s", rel)
			}
			return nil
		}
		b, _ := os.ReadFile(path)
		k := slices.Index(st.versions[rel], sha(string(b)))
		j, journaled := lastRow[rel]
		switch {
		case k < 0:
			t.Errorf("%s is torn: %d bytes matching no version sent", rel, len(b))
		case journaled && k < j:
			t.Errorf("%s: journal row (version %d) is ahead of the file (version %d)", rel, j, k)
		case !allowTemps && (!journaled || k != j):
			// After a restart, recovery has journaled every write that
			// landed.
			t.Errorf("%s: the file is version %d but its last journal row is version %d (journaled %v)", rel, k, j, journaled)
		}
		return nil
	})
}
