//go:build unix

package mcpserver_test

import (
	"encoding/json"
	"fmt"
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

// fleet is several real `apiary mcp` processes serving one workspace, as
// several agent sessions do: each Claude Code (or Codex, Gemini) session
// starts its own stdio server.
type fleet struct {
	t   *testing.T
	ws  string
	cs  []*mcp.ClientSession
	pid []int // 0 for HTTP members (their process is not ours to signal here)
}

// startFleet starts nStdio stdio servers and nHTTP HTTP servers on ws.
func startFleet(t *testing.T, ws string, nStdio, nHTTP int) *fleet {
	t.Helper()
	f := &fleet{t: t, ws: ws}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, nStdio+nHTTP)
	for range nStdio {
		wg.Go(func() {
			cmd := apiaryCmd(t, ws, srvOpts{}, "mcp")
			client := mcp.NewClient(&mcp.Implementation{Name: "fleet", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				errs <- err
				return
			}
			t.Cleanup(func() { cs.Close() })
			mu.Lock()
			f.cs, f.pid = append(f.cs, cs), append(f.pid, cmd.Process.Pid)
			mu.Unlock()
		})
	}
	wg.Wait()
	for range nHTTP {
		url := startHTTP(t, ws, srvOpts{})
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "fleet", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		f.cs, f.pid = append(f.cs, cs), append(f.pid, 0)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return f
}

// call invokes a tool on member i; a protocol error fails the test.
func (f *fleet) call(i int, tool string, args map[string]any) map[string]any {
	res, err := f.cs[i].CallTool(f.t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		f.t.Errorf("server %d %s: %v", i, tool, err)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &m); err != nil {
		f.t.Errorf("server %d %s: %v", i, tool, err)
	}
	return m
}

// all runs fn(i) for every member at once, released together.
func (f *fleet) all(fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range f.cs {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// journalRows reads the journal file directly.
func journalRows(t *testing.T, ws string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, ".apiary/durable/journal.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var rows []map[string]any
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("journal line %d is not a row: %q", i+1, line)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestManyServersOCC: 8 servers (6 stdio, 2 streamable HTTP) on one
// workspace race 30 rounds of a guarded write to one file, each expecting
// the previous round's hash. Every round has exactly one winner; every
// loser gets stale_precondition with the winner's hash as the actual one;
// the file holds the winner's bytes; the journal has one row per round, in
// order.
func TestManyServersOCC(t *testing.T) {
	t.Parallel()
	ws := workspaceDir(t)
	f := startFleet(t, ws, 6, 2)
	prev := ""
	var winners []string
	for round := range 30 {
		results := make([]map[string]any, len(f.cs))
		contents := make([]string, len(f.cs))
		f.all(func(i int) {
			contents[i] = fmt.Sprintf("round %d, writer %d\n%s", round, i, strings.Repeat("x", 100*i))
			results[i] = f.call(i, "rw.safe_write", map[string]any{
				"path": "occ.txt", "content": contents[i], "mode": "overwrite", "expected_prev_sha256": prev,
			})
		})
		win := -1
		for i, r := range results {
			if r["ok"] == true {
				if win >= 0 {
					t.Fatalf("round %d: writers %d and %d both won", round, win, i)
				}
				win = i
			}
		}
		if win < 0 {
			t.Fatalf("round %d: no winner: %v", round, results)
		}
		for i, r := range results {
			if i == win {
				continue
			}
			ctx, _ := r["context"].(map[string]any)
			if r["error"] != "stale_precondition" || ctx["actual_prev_sha256"] != sha(contents[win]) {
				t.Fatalf("round %d: loser %d got %v (winner %d)", round, i, r, win)
			}
		}
		got, err := os.ReadFile(filepath.Join(ws, "occ.txt"))
		if err != nil || string(got) != contents[win] {
			t.Fatalf("round %d: file is not the winner's bytes", round)
		}
		prev = sha(contents[win])
		winners = append(winners, prev)
	}
	var journaled []string
	for _, r := range journalRows(t, ws) {
		if r["path"] == "occ.txt" {
			journaled = append(journaled, r["sha256"].(string))
		}
	}
	if !slices.Equal(journaled, winners) {
		t.Fatalf("journal rows for occ.txt %d, want the %d winners in order", len(journaled), len(winners))
	}
}

// TestManyServersChunkAppend: 20 stdio servers each append one part to one
// session at the same moment: all 20 are acknowledged with distinct
// indices 1..20, and the composed file holds all 20 parts in index order.
func TestManyServersChunkAppend(t *testing.T) {
	t.Parallel()
	ws := workspaceDir(t)
	f := startFleet(t, ws, 20, 0)
	idx := make([]int, len(f.cs))
	f.all(func(i int) {
		r := f.call(i, "rw.chunk_append", map[string]any{"session": "many", "content": fmt.Sprintf("[part from server %d]\n", i)})
		if r["ok"] != true {
			t.Errorf("server %d: append refused: %v", i, r)
			return
		}
		idx[i] = int(num(r["index"]))
	})
	sorted := slices.Clone(idx)
	slices.Sort(sorted)
	for i, n := range sorted {
		if n != i+1 {
			t.Fatalf("indices %v, want 1..20 each once", sorted)
		}
	}
	r := f.call(0, "rw.chunk_compose", map[string]any{"session": "many", "output_path": "many.txt"})
	if r["ok"] != true || num(r["chunk_count"]) != 20 {
		t.Fatalf("compose %v", r)
	}
	got, _ := os.ReadFile(filepath.Join(ws, "many.txt"))
	for i, n := range idx {
		line := fmt.Sprintf("[part from server %d]\n", i)
		if at := strings.Index(string(got), line); at < 0 || strings.Count(string(got[:at]), "\n") != n-1 {
			t.Fatalf("server %d's part (index %d) is not line %d of the composed file", i, n, n)
		}
	}
}

// TestManyServersState: scratch puts, checkpoints and appends from 8
// servers at once lose nothing: the scratch index has every row, a
// checkpoint saved by all keeps one created_at and a whole document, 8
// appends of one line each leave 8 lines, and the journal parses.
func TestManyServersState(t *testing.T) {
	t.Parallel()
	ws := workspaceDir(t)
	f := startFleet(t, ws, 8, 0)
	f.call(0, "rw.safe_write", map[string]any{"path": "log.txt", "content": ""})
	f.call(0, "rw.checkpoint", map[string]any{"name": "shared", "data": map[string]any{"by": -1}})
	first := f.call(0, "rw.checkpoint_read", map[string]any{"name": "shared"})["created_at"]
	for range 3 {
		f.all(func(i int) {
			for _, r := range []map[string]any{
				f.call(i, "rw.scratch_put", map[string]any{"content": fmt.Sprintf("scratch %d %d\n", i, time.Now().UnixNano()), "label": fmt.Sprint(i)}),
				f.call(i, "rw.checkpoint", map[string]any{"name": "shared", "data": map[string]any{"by": i, "pad": strings.Repeat("y", 1000*i)}}),
				f.call(i, "rw.safe_write", map[string]any{"path": "log.txt", "content": fmt.Sprintf("line from %d\n", i), "mode": "append"}),
			} {
				if r["ok"] != true {
					t.Errorf("server %d: %v", i, r)
				}
			}
		})
	}
	idx, _ := os.ReadFile(filepath.Join(ws, ".apiary/durable/scratch/index.jsonl"))
	if n := strings.Count(string(idx), "\n"); n != 24 {
		t.Fatalf("scratch index has %d rows, want 24", n)
	}
	cp := f.call(3, "rw.checkpoint_read", map[string]any{"name": "shared"})
	if cp["ok"] != true || cp["created_at"] != first {
		t.Fatalf("checkpoint %v (created_at want %v)", cp, first)
	}
	log, _ := os.ReadFile(filepath.Join(ws, "log.txt"))
	if n := strings.Count(string(log), "\n"); n != 24 {
		t.Fatalf("log.txt has %d lines, want 24 (lost appends)", n)
	}
	if rows := journalRows(t, ws); len(rows) != 2+3*24 {
		t.Fatalf("journal has %d rows, want %d", len(rows), 2+3*24)
	}
}

// lockHolders returns, from /proc/locks, the pids holding (not waiting
// for) a flock on the file with inode ino.
func lockHolders(t *testing.T, ino uint64) []int {
	t.Helper()
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatalf("this test needs /proc/locks: %v", err)
	}
	var pids []int
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		var maj, min, i uint64
		var pid int
		if _, err := fmt.Sscanf(f[5], "%x:%x:%d", &maj, &min, &i); err != nil || i != ino {
			continue
		}
		fmt.Sscan(f[4], &pid)
		pids = append(pids, pid)
	}
	return pids
}

// TestKilledLockHolder: four stdio servers overwrite one file in a loop.
// One is caught holding the file's lock and frozen (SIGSTOP): while it is
// frozen, nobody else completes a write to that file. Then it is killed
// (SIGKILL) with the lock in hand: the kernel releases the lock with it and
// the others proceed within a second. Afterwards every acknowledged write
// has its journal row, the file is the last journaled version (the dead
// writer's write, if it had landed, was journaled as recovered by the next
// holder), and a new server sweeps the dead writer's temp file.
func TestKilledLockHolder(t *testing.T) {
	t.Parallel()
	ws := workspaceDir(t)
	f := startFleet(t, ws, 4, 0)
	f.call(0, "rw.safe_write", map[string]any{"path": "hot.bin", "content": "seed"})
	lockDir := filepath.Join(ws, ".apiary/durable/locks")
	var ino uint64
	ents, _ := os.ReadDir(lockDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "path-") {
			fi, _ := os.Stat(filepath.Join(lockDir, e.Name()))
			ino = fi.Sys().(*syscall.Stat_t).Ino
		}
	}
	if ino == 0 {
		t.Fatal("no path lock file")
	}
	type ack struct {
		server int
		at     time.Time
		id     string
	}
	acks := make(chan ack, 1000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	big := strings.Repeat("z", 2<<20)
	for i := range f.cs {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := f.cs[i].CallTool(t.Context(), &mcp.CallToolParams{Name: "rw.safe_write", Arguments: map[string]any{
					"path": "hot.bin", "content": fmt.Sprintf("%d/%d ", i, n) + big, "mode": "overwrite"}})
				if err != nil {
					return // this server was killed
				}
				var r map[string]any
				json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &r)
				if r["ok"] != true {
					t.Errorf("server %d: %v", i, r)
					return
				}
				acks <- ack{i, time.Now(), r["journal_id"].(string)}
			}
		})
	}
	// Catch a holder and freeze it while it holds the lock.
	victim := -1
	deadline := time.Now().Add(60 * time.Second)
	for victim < 0 && time.Now().Before(deadline) {
		for _, pid := range lockHolders(t, ino) {
			k := slices.Index(f.pid, pid)
			if k < 0 {
				continue
			}
			syscall.Kill(pid, syscall.SIGSTOP)
			if slices.Contains(lockHolders(t, ino), pid) {
				victim = k
				break
			}
			syscall.Kill(pid, syscall.SIGCONT) // it let go just before: try again
		}
	}
	if victim < 0 {
		t.Fatal("never caught a server holding the lock")
	}
	var acked []ack
	drain := func() {
		for {
			select {
			case a := <-acks:
				acked = append(acked, a)
			default:
				return
			}
		}
	}
	drain()
	frozenAt := time.Now()
	time.Sleep(300 * time.Millisecond) // the others must be waiting on the frozen holder
	drain()
	for _, a := range acked {
		if a.at.After(frozenAt.Add(50 * time.Millisecond)) {
			t.Fatalf("server %d completed a write while server %d held the lock frozen", a.server, victim)
		}
	}
	syscall.Kill(f.pid[victim], syscall.SIGKILL)
	killedAt := time.Now()
	var next ack
	select {
	case next = <-acks:
	case <-time.After(30 * time.Second): // hang guard; the bound is checked below
		t.Fatal("no server proceeded after the holder was killed")
	}
	waited := next.at.Sub(killedAt)
	t.Logf("after SIGKILL of the holder (server %d), server %d acknowledged a write %v later", victim, next.server, waited)
	if waited > time.Second {
		t.Fatalf("the others waited %v after the holder died", waited)
	}
	acked = append(acked, next)
	time.Sleep(100 * time.Millisecond) // a few more rounds among the survivors
	close(stop)
	wg.Wait()
	drain()
	rows := journalRows(t, ws)
	ids := map[string]map[string]any{}
	var last map[string]any
	for _, r := range rows {
		ids[r["journal_id"].(string)] = r
		if r["path"] == "hot.bin" {
			last = r
		}
	}
	for _, a := range acked {
		if ids[a.id] == nil {
			t.Fatalf("acknowledged write %s of server %d has no journal row", a.id, a.server)
		}
	}
	got, _ := os.ReadFile(filepath.Join(ws, "hot.bin"))
	if sha(string(got)) != last["sha256"] {
		t.Fatalf("hot.bin is not its last journaled version (recovered=%v)", last["recovered"])
	}
	// A fresh server sweeps the dead writer's temp file, if it left one.
	temps := func() int {
		n := 0
		ents, _ := os.ReadDir(ws)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp.") {
				n++
			}
		}
		return n
	}
	before := temps()
	g := startFleet(t, ws, 1, 0)
	g.call(0, "rw.stat", map[string]any{"path": "hot.bin"})
	if n := temps(); n != 0 {
		t.Fatalf("%d temp files left after a restart (%d before)", n, before)
	}
	t.Logf("%d writes acknowledged, %d journal rows, dead writer left %d temp file(s)", len(acked), len(rows), before)
}
