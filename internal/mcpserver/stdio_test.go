//go:build unix

package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawServer is a real `apiary mcp` spoken to line by line, bypassing every
// client library, so a test can send what no client would.
type rawServer struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	mu    sync.Mutex
	lines []map[string]any // every message the server wrote, in order
	raw   []string
	got   chan struct{}
	done  chan struct{}
}

func startRaw(t *testing.T, ws string, o srvOpts) *rawServer {
	t.Helper()
	cmd := apiaryCmd(t, ws, o, "mcp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawServer{t: t, cmd: cmd, in: in, got: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			line := sc.Text()
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				// a batch reply: an array of messages
				var arr []map[string]any
				if json.Unmarshal([]byte(line), &arr) != nil {
					t.Errorf("server wrote a line that is not JSON-RPC: %q", line)
					continue
				}
				s.mu.Lock()
				s.lines = append(s.lines, arr...)
				s.raw = append(s.raw, line)
				s.mu.Unlock()
			} else {
				s.mu.Lock()
				s.lines = append(s.lines, m)
				s.raw = append(s.raw, line)
				s.mu.Unlock()
			}
			select {
			case s.got <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return s
}

func (s *rawServer) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write to server: %v", err)
	}
}

// waitFor waits until pred holds for the messages so far (a hang guard, not
// a timing assertion).
func (s *rawServer) waitFor(what string, pred func(ms []map[string]any) bool) []map[string]any {
	s.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		s.mu.Lock()
		ms := append([]map[string]any(nil), s.lines...)
		s.mu.Unlock()
		if pred(ms) {
			return ms
		}
		select {
		case <-s.got:
		case <-s.done:
			s.mu.Lock()
			ms := append([]map[string]any(nil), s.lines...)
			s.mu.Unlock()
			if pred(ms) {
				return ms
			}
			s.t.Fatalf("server exited waiting for %s", what)
		case <-deadline:
			s.t.Fatalf("timed out waiting for %s; got %d messages", what, len(ms))
		}
	}
}

func (s *rawServer) initialize() {
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.waitFor("initialize", func(ms []map[string]any) bool { return byID(ms, `"init"`) != nil })
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// idKey renders a message's id for matching: its JSON text.
func idKey(m map[string]any) string {
	v, ok := m["id"]
	if !ok {
		return "<none>"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func byID(ms []map[string]any, id string) map[string]any {
	for _, m := range ms {
		if idKey(m) == id {
			return m
		}
	}
	return nil
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	f, _ := e["code"].(float64)
	return int(f)
}

// malformed lines and what the server must answer: the id of the reply
// ("null" when the request's id is unusable, "" for no reply at all) and its
// code.
var malformed = []struct {
	line string
	id   string
	code int
}{
	{`not json at all`, "null", -32700},
	{`{"jsonrpc":"2.0","id":1,"method":`, "null", -32700},
	{`{"jsonrpc":"2.0","id":"x","method":"ping"`, "null", -32700},
	{`[]`, "null", -32600},
	{`{}`, "null", -32600},
	{`null`, "null", -32600},
	{`"a string"`, "null", -32600},
	{`12`, "null", -32600},
	{`{"id":"noversion","method":"ping"}`, `"noversion"`, -32600},
	{`{"jsonrpc":"1.0","id":"oldversion","method":"ping"}`, `"oldversion"`, -32600},
	{`{"jsonrpc":2,"id":"numversion","method":"ping"}`, `"numversion"`, -32600},
	{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", -32600},
	{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "null", -32600},
	{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "null", -32600},
	{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null", -32600},
	{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", -32600},
	{`{"jsonrpc":"2.0","id":"nummethod","method":7}`, `"nummethod"`, -32600},
	{`{"jsonrpc":"2.0","id":"strparams","method":"tools/call","params":"x"}`, `"strparams"`, -32600},
	{`{"jsonrpc":"2.0","id":"noresult"}`, `"noresult"`, -32600},
	{`{"jsonrpc":"2.0","id":"unknown","method":"no/such/method"}`, `"unknown"`, -32601},
	{`{"jsonrpc":"2.0","id":"badcall","method":"tools/call","params":{"name":5}}`, `"badcall"`, -32602},
	{"\x00\x01\x02\xff\xfe", "null", -32700},
	{`{"jsonrpc":"2.0","method":"notifications/unknown"}`, "", 0},
	{`{"jsonrpc":"2.0","id":"stray","result":{}}`, "", 0},
	{`   `, "", 0},
}

// TestStdioSurvivesMalformedLines: a real `apiary mcp` fed a seeded random
// interleaving of malformed lines (every class above, plus random bytes and
// truncated valid calls) and valid tool calls answers every valid call
// correctly, answers every malformed line with the right code and id (or
// not at all, for notifications and stray responses), and keeps serving
// until stdin closes, then exits 0.
func TestStdioSurvivesMalformedLines(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			stdioFuzzRound(t, seed, 150)
		})
	}
}

func stdioFuzzRound(t *testing.T, seed uint64, n int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	ws := workspaceDir(t)
	s := startRaw(t, ws, srvOpts{})
	s.initialize()
	type want struct {
		id   string
		code int // 0: a successful tool result
		file string
		body string
	}
	var wants []want
	nullErrors := map[int]int{}
	calls := 0
	for i := range n {
		switch k := rng.IntN(10); {
		case k < 4:
			calls++
			id := fmt.Sprintf(`"call-%d"`, i)
			file := fmt.Sprintf("f/%d.txt", i)
			body := fmt.Sprintf("body %d %s", i, strings.Repeat("é\"\\\n", rng.IntN(50)))
			args, _ := json.Marshal(map[string]any{"path": file, "content": body})
			s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"rw.safe_write","arguments":%s}}`, id, args))
			wants = append(wants, want{id: id, file: file, body: body})
		case k < 8:
			m := malformed[rng.IntN(len(malformed))]
			switch m.id {
			case "":
				s.send(m.line)
			case "null":
				s.send(m.line)
				nullErrors[m.code]++
			default:
				// Each id is used once, so that its reply is unambiguous.
				base := strings.Trim(m.id, `"`)
				fresh := strings.Replace(m.line, base, fmt.Sprintf("%s-%d", base, i), 1)
				s.send(fresh)
				wants = append(wants, want{id: fmt.Sprintf(`"%s-%d"`, base, i), code: m.code})
			}
		case k < 9:
			// random bytes (no newline): a parse error
			b := make([]byte, 1+rng.IntN(40))
			for j := range b {
				b[j] = byte(rng.IntN(256))
				if b[j] == '\n' || b[j] == '\r' {
					b[j] = 'x'
				}
			}
			line := "{" + string(b)
			if json.Valid([]byte(line)) {
				continue
			}
			s.send(line)
			nullErrors[-32700]++
		default:
			// a valid call cut short
			full := fmt.Sprintf(`{"jsonrpc":"2.0","id":"cut-%d","method":"tools/call","params":{"name":"rw.stat","arguments":{"path":"x"}}}`, i)
			s.send(full[:1+rng.IntN(len(full)-2)])
			nullErrors[-32700]++
		}
	}
	s.send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	ms := s.waitFor("every answer", func(ms []map[string]any) bool {
		if byID(ms, `"last"`) == nil {
			return false
		}
		for _, w := range wants {
			if byID(ms, w.id) == nil {
				return false
			}
		}
		return true
	})
	seen := map[string]int{}
	gotNull := map[int]int{}
	for _, m := range ms {
		if m["jsonrpc"] != "2.0" {
			t.Fatalf("reply without jsonrpc 2.0: %v", m)
		}
		k := idKey(m)
		seen[k]++
		if k == "null" {
			gotNull[errCode(m)]++
		}
	}
	for _, w := range wants {
		m := byID(ms, w.id)
		if seen[w.id] > 1 && w.code == 0 {
			t.Fatalf("%s answered %d times", w.id, seen[w.id])
		}
		if w.code != 0 {
			if errCode(m) != w.code {
				t.Fatalf("%s: want code %d, got %v", w.id, w.code, m)
			}
			continue
		}
		res, _ := m["result"].(map[string]any)
		if res == nil || res["isError"] == true {
			t.Fatalf("%s: valid call failed: %v", w.id, m)
		}
		if b, err := os.ReadFile(filepath.Join(ws, w.file)); err != nil || string(b) != w.body {
			t.Fatalf("%s: file %s holds %q (%v), want %q", w.id, w.file, b, err, w.body)
		}
	}
	for code, n := range nullErrors {
		if gotNull[code] != n {
			t.Fatalf("code %d with id null: got %d replies, want %d (all null replies %v)", code, gotNull[code], n, gotNull)
		}
	}
	if seen[`"stray"`] != 0 || seen["<none>"] != 0 {
		t.Fatalf("a notification or stray response was answered: %v", seen)
	}
	s.in.Close()
	<-s.done
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("server exit after stdin closed: %v", err)
	}
	t.Logf("%d calls and %d malformed lines answered", calls, n-calls)
}

// TestStdioBatch: a batch is answered as one array once its requests are,
// with invalid members answered in it; an empty batch gets one -32600.
func TestStdioBatch(t *testing.T) {
	t.Parallel()
	s := startRaw(t, workspaceDir(t), srvOpts{})
	s.initialize()
	s.send(`[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"bad":1},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}},{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"rw.stat","arguments":{"path":"nothing-here"}}}]`)
	s.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	s.waitFor("batch and ping", func(ms []map[string]any) bool { return byID(ms, `"b2"`) != nil && byID(ms, `"after"`) != nil })
	s.mu.Lock()
	defer s.mu.Unlock()
	var batchLine string
	for _, l := range s.raw {
		if strings.HasPrefix(l, "[") {
			batchLine = l
		}
	}
	var arr []map[string]any
	if err := json.Unmarshal([]byte(batchLine), &arr); err != nil || len(arr) != 3 {
		t.Fatalf("batch reply %q: want one array of 3", batchLine)
	}
	ids := map[string]bool{}
	for _, m := range arr {
		ids[idKey(m)] = true
	}
	if !ids[`"b1"`] || !ids[`"b2"`] || !ids["null"] {
		t.Fatalf("batch reply ids %v", ids)
	}
}

// holdLocks takes, from this test process, the flock of every lock file a
// server would need for the given class ("path", "journal"): the server's
// next write of that class waits.
func holdLocks(t *testing.T, ws, class string) (release func()) {
	t.Helper()
	dir := filepath.Join(ws, ".apiary/durable/locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	if class == "journal" {
		names = []string{"journal.lock"}
	} else {
		for i := range 256 {
			names = append(names, fmt.Sprintf("%s-%02x.lock", class, i))
		}
	}
	var files []*os.File
	for _, n := range names {
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			for _, f := range files {
				f.Close()
			}
		})
	}
	t.Cleanup(release)
	return release
}

// waitBlocked waits until process pid is blocked in flock(2), as
// /proc/locks shows it (a "->" waiter line).
func waitBlocked(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatalf("this test needs /proc/locks: %v", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) > 5 && f[1] == "->" && f[2] == "FLOCK" && f[5] == fmt.Sprint(pid) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond) // polling the kernel's lock table
	}
	t.Fatalf("process %d never blocked on a lock", pid)
}

// TestStdioCancelledNotAnswered: a tools/call the client cancels is never
// answered. Cancelled while it waits for its path lock (before the commit
// point) it writes nothing; cancelled while it waits for the journal (after
// the commit point) it completes, journal row included, and still sends no
// answer. The server answers the next request either way.
func TestStdioCancelledNotAnswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		class   string
		written bool
	}{{"path", false}, {"journal", true}} {
		t.Run(tc.class, func(t *testing.T) {
			t.Parallel()
			ws := workspaceDir(t)
			s := startRaw(t, ws, srvOpts{})
			s.initialize()
			// a first write creates the state directory
			s.send(`{"jsonrpc":"2.0","id":"warm","method":"tools/call","params":{"name":"rw.safe_write","arguments":{"path":"warm.txt","content":"w"}}}`)
			s.waitFor("warm", func(ms []map[string]any) bool { return byID(ms, `"warm"`) != nil })
			release := holdLocks(t, ws, tc.class)
			s.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"rw.safe_write","arguments":{"path":"slow.txt","content":"slow"}}}`)
			waitBlocked(t, s.cmd.Process.Pid)
			s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"test"}}`)
			// The cancel must reach the handler before the lock frees:
			// a ping answered proves the notification was read.
			s.send(`{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
			s.waitFor("p1", func(ms []map[string]any) bool { return byID(ms, `"p1"`) != nil })
			release()
			s.send(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"rw.safe_write","arguments":{"path":"after.txt","content":"a"}}}`)
			ms := s.waitFor("after", func(ms []map[string]any) bool { return byID(ms, `"after"`) != nil })
			if m := byID(ms, `"slow"`); m != nil {
				t.Fatalf("cancelled request answered: %v", m)
			}
			_, err := os.Stat(filepath.Join(ws, "slow.txt"))
			if written := err == nil; written != tc.written {
				t.Fatalf("slow.txt written=%v, want %v", written, tc.written)
			}
			journal, _ := os.ReadFile(filepath.Join(ws, ".apiary/durable/journal.jsonl"))
			if strings.Contains(string(journal), `"slow.txt"`) != tc.written {
				t.Fatalf("journal row for slow.txt present=%v, want %v", !tc.written, tc.written)
			}
			s.in.Close()
			<-s.done
			if m := byID(s.lines, `"slow"`); m != nil {
				t.Fatalf("cancelled request answered at exit: %v", m)
			}
		})
	}
}

// TestIntegralNumbers: integers written as 1.0 or 2e0 (JSON Schema's
// integer is any number without a fractional part) are accepted; 3.5 is
// refused with a typed envelope.
func TestIntegralNumbers(t *testing.T) {
	t.Parallel()
	ws := workspaceDir(t)
	s := startRaw(t, ws, srvOpts{})
	s.initialize()
	for i, n := range []string{"1.0", "2e0", "3.5"} {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"rw.chunk_write","arguments":{"session":"s","index":%s,"content":"x"}}}`, i, n))
	}
	ms := s.waitFor("three answers", func(ms []map[string]any) bool {
		return byID(ms, "2") != nil && byID(ms, "1") != nil && byID(ms, "0") != nil
	})
	for i, want := range []bool{true, true, false} {
		res := obj(byID(ms, fmt.Sprint(i))["result"])
		var r map[string]any
		json.Unmarshal([]byte(obj(list(res["content"])[0])["text"].(string)), &r)
		if r["ok"] != want {
			t.Fatalf("call %d: %v", i, r)
		}
		if want && num(r["index"]) != float64(i+1) {
			t.Fatalf("call %d: index %v", i, r["index"])
		}
	}
}
