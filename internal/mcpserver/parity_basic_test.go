//go:build unix

package mcpserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/mcpserver"
)

// TestParityServer covers checklist groups A (server), B (dispatch), C
// (stdio integration), D (safe_write) and E (journal).
func TestParityServer(t *testing.T) {
	t.Parallel()
	runCases(t, []parityCase{
		{id: "A01-02", run: func(c *pc) {
			info := c.cs.InitializeResult()
			if info == nil || info.ServerInfo == nil || info.ServerInfo.Name == "" || info.ServerInfo.Version == "" {
				c.t.Fatalf("serverInfo = %+v", info)
			}
			if !strings.Contains(info.Instructions, "rw.safe_write") {
				c.t.Errorf("instructions do not mention rw.safe_write: %q", info.Instructions)
			}
		}},
		{id: "A01-compat", opts: srvOpts{compat: true}, run: func(c *pc) {
			if n := c.cs.InitializeResult().ServerInfo.Name; n != "resilient-write" {
				c.t.Fatalf("compat serverInfo.name = %q", n)
			}
		}},
		{id: "A03", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x\n"})
			if c.read("a.txt") != "x\n" {
				c.t.Fatal("a.txt not in RW_WORKSPACE")
			}
		}},
		{id: "A04", opts: srvOpts{noWS: true}, skip: []string{inMemory}, run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x\n"})
			if c.read("a.txt") != "x\n" {
				c.t.Fatal("a.txt not in the current directory")
			}
		}},
		{id: "B06-07", inmem: true, run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "hi\n"})
			if r["path"] != "a.txt" || c.read("a.txt") != "hi\n" {
				c.t.Fatalf("got %v", r)
			}
			e := c.fail("rw.safe_write", map[string]any{"path": "../escape.txt", "content": "x"}, "policy_violation", "permission")
			if obj(e["context"])["tool"] != "rw.safe_write" {
				c.t.Fatal("context.tool missing")
			}
		}},
		{id: "B08", inmem: true, run: func(c *pc) {
			e := c.fail("rw.nope", nil, "policy_violation", "")
			if obj(e["context"])["unknown_tool"] != "rw.nope" {
				c.t.Fatalf("got %v", e)
			}
		}},
		{id: "B09", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "a"})
			c.ok("rw.safe_write", map[string]any{"path": "b.txt", "content": "b"})
			got := paths(list(c.ok("rw.journal_tail", map[string]any{"n": 5})["entries"]))
			if !slices.Equal(got, []string{"a.txt", "b.txt"}) {
				c.t.Fatalf("entries %v", got)
			}
		}},
		{id: "B10", run: func(c *pc) {
			for i, w := range []string{"one ", "two ", "three"} {
				c.ok("rw.chunk_write", map[string]any{"session": "demo", "index": i + 1, "content": w, "total_expected": 3})
			}
			st := c.ok("rw.chunk_status", map[string]any{"session": "demo"})
			if fmt.Sprint(st["present_indices"]) != "[1 2 3]" {
				c.t.Fatalf("status %v", st)
			}
			r := c.ok("rw.chunk_compose", map[string]any{"session": "demo", "output_path": "out.txt", "cleanup": true})
			if num(r["chunk_count"]) != 3 || c.read("out.txt") != "one two three" {
				c.t.Fatalf("compose %v", r)
			}
			if r := c.ok("rw.chunk_reset", map[string]any{"session": "demo"}); r["existed"] != false {
				c.t.Fatalf("reset after cleanup %v", r)
			}
		}},
		{id: "B11", run: func(c *pc) {
			c.fail("rw.chunk_write", map[string]any{"session": "has space", "index": 1, "content": "x"}, "policy_violation", "")
		}},
		{id: "B12", run: func(c *pc) {
			for i, s := range []string{"section 1\n", "section 2\n"} {
				if r := c.ok("rw.chunk_append", map[string]any{"session": "s", "content": s}); num(r["index"]) != float64(i+1) {
					c.t.Fatalf("append %d: %v", i, r)
				}
			}
			c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "draft.txt"})
			if got := c.read("draft.txt"); got != "section 1\nsection 2\n" {
				c.t.Fatalf("draft %q", got)
			}
		}},
		{id: "B13", run: func(c *pc) {
			r := c.ok("rw.risk_score", map[string]any{"content": "hello, just a plain note\n"})
			if r["verdict"] != "safe" || len(list(r["detected_patterns"])) != 0 {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "B14", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "raw material\n", "label": "alpha"})
			ref := c.ok("rw.scratch_ref", map[string]any{"sha256": p["sha256"]})
			if obj(ref["entry"])["label"] != "alpha" {
				c.t.Fatalf("ref %v", ref)
			}
			if g := c.ok("rw.scratch_get", map[string]any{"sha256": p["sha256"]}); g["content"] != "raw material\n" {
				c.t.Fatalf("get %v", g)
			}
		}},
		{id: "B15", opts: srvOpts{env: map[string]string{"RW_SCRATCH_DISABLE_GET": "yes"}}, run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "raw material\n"})
			c.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "policy_violation", "permission")
		}},
		{id: "B16-C23", run: func(c *pc) {
			c.ok("rw.handoff_write", map[string]any{"envelope": map[string]any{
				"task_id": "t1", "status": "complete", "agent": "a", "summary": "s", "next_steps": []any{}, "last_good_state": []any{},
			}})
			if r := c.ok("rw.handoff_read", nil); obj(r["envelope"])["task_id"] != "t1" {
				c.t.Fatalf("read %v", r)
			}
		}},
		{id: "C17", inmem: true, run: func(c *pc) {
			res, err := c.cs.ListTools(c.ctx, nil)
			if err != nil {
				c.t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
				if tl.OutputSchema == nil || tl.Annotations == nil {
					c.t.Errorf("%s lacks outputSchema or annotations", tl.Name)
				}
				if obj(tl.InputSchema)["additionalProperties"] != false {
					c.t.Errorf("%s input schema allows extra properties", tl.Name)
				}
			}
			for _, want := range []string{"rw.safe_write", "rw.risk_score", "rw.chunk_write", "rw.scratch_put", "rw.handoff_write", "rw.journal_tail"} {
				if !slices.Contains(names, want) {
					c.t.Errorf("tools/list lacks %s", want)
				}
			}
			if len(names) != 27 || !slices.Equal(names, mcpserver.ToolNames()) {
				c.t.Errorf("%d tools: %v, want %v", len(names), names, mcpserver.ToolNames())
			}
		}},
		{id: "C18-19", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "notes.txt", "content": "hello from stdio\n"})
			if c.read("notes.txt") != "hello from stdio\n" || len(list(c.ok("rw.journal_tail", map[string]any{"n": 5})["entries"])) != 1 {
				c.t.Fatal("write or journal wrong")
			}
			if r := c.ok("rw.risk_score", map[string]any{"content": "# heading\nharmless prose\n"}); r["verdict"] != "safe" {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "C20", run: func(c *pc) {
			c.fail("rw.safe_write", map[string]any{"path": "../escape.txt", "content": "x"}, "policy_violation", "permission")
		}},
		{id: "C21-22", run: func(c *pc) {
			for i, w := range []string{"alpha ", "bravo ", "charlie"} {
				c.ok("rw.chunk_write", map[string]any{"session": "s", "index": i + 1, "content": w, "total_expected": 3})
			}
			if r := c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "o.txt", "cleanup": true}); num(r["chunk_count"]) != 3 || c.read("o.txt") != "alpha bravo charlie" {
				c.t.Fatalf("got %v", r)
			}
			p := c.ok("rw.scratch_put", map[string]any{"content": "raw material\n"})
			if g := c.ok("rw.scratch_get", map[string]any{"sha256": p["sha256"]}); g["content"] != "raw material\n" {
				c.t.Fatalf("get %v", g)
			}
		}},
		{id: "D24", run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "notes.txt", "content": "hello\n"})
			if r["sha256"] != sha("hello\n") || num(r["bytes"]) != 6 || r["mode_applied"] != "create" || !strings.HasPrefix(fmt.Sprint(r["journal_id"]), "wj_") {
				c.t.Fatalf("got %v", r)
			}
			rows := c.journal()
			if len(rows) != 1 || rows[0]["path"] != "notes.txt" || rows[0]["sha256"] != sha("hello\n") || rows[0]["journal_id"] != r["journal_id"] {
				c.t.Fatalf("journal %v", rows)
			}
		}},
		{id: "D25", setup: func(ws string) { os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old\n"), 0o644) }, run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "new\n"}, "stale_precondition", "")
			if e["suggested_action"] != "ask_user" || obj(e["context"])["existing_sha256"] != sha("old\n") || c.read("a.txt") != "old\n" {
				c.t.Fatalf("got %v", e)
			}
		}},
		{id: "D26", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "v1\n"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "v2\n", "mode": "overwrite"})
			if c.read("a.txt") != "v2\n" || len(c.journal()) != 2 {
				c.t.Fatal("overwrite wrong")
			}
		}},
		{id: "D27", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "line1\n"})
			r := c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "line2\n", "mode": "append"})
			if c.read("a.txt") != "line1\nline2\n" || r["sha256"] != sha("line1\nline2\n") || num(r["bytes"]) != 12 {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "D28-29", run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "v1\n"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "v2\n", "mode": "overwrite", "expected_prev_sha256": r["sha256"]})
			e := c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "v3\n", "mode": "overwrite", "expected_prev_sha256": strings.Repeat("deadbeef", 8)}, "stale_precondition", "")
			if obj(e["context"])["actual_prev_sha256"] != sha("v2\n") || c.read("a.txt") != "v2\n" {
				c.t.Fatalf("got %v", e)
			}
		}},
		{id: "D30-31", run: func(c *pc) {
			for _, p := range []string{"../escape.txt", "/etc/passwd"} {
				c.fail("rw.safe_write", map[string]any{"path": p, "content": "x", "mode": "overwrite"}, "policy_violation", "")
			}
		}},
		{id: "D32", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a/b/c/deep.txt", "content": "deep"})
			if c.read("a/b/c/deep.txt") != "deep" {
				c.t.Fatal("not written")
			}
		}},
		{id: "D33-34", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x"})
			c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "y"}, "stale_precondition", "")
			assertNoTemps(c.t, c.ws)
		}},
		{id: "D35", opts: srvOpts{compat: true}, run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "a"})
			c.ok("rw.safe_write", map[string]any{"path": "b.txt", "content": "b"})
			raw := strings.Split(strings.TrimRight(c.read(".resilient_write/journal.jsonl"), "\n"), "\n")
			rows := c.journal()
			if len(raw) != 2 || !slices.Equal(paths([]any{rows[0], rows[1]}), []string{"a.txt", "b.txt"}) {
				c.t.Fatalf("journal %q", raw)
			}
		}},
		{id: "E36", run: func(c *pc) {
			if e := list(c.ok("rw.journal_tail", map[string]any{"n": 10})["entries"]); len(e) != 0 {
				c.t.Fatalf("fresh journal %v", e)
			}
		}},
		{id: "E37", run: func(c *pc) {
			for i := range 5 {
				c.ok("rw.safe_write", map[string]any{"path": fmt.Sprintf("f%d.txt", i), "content": "x"})
			}
			if got := paths(list(c.ok("rw.journal_tail", map[string]any{"n": 2})["entries"])); !slices.Equal(got, []string{"f3.txt", "f4.txt"}) {
				c.t.Fatalf("tail %v", got)
			}
		}},
		{id: "E38-39", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "1"})
			c.ok("rw.safe_write", map[string]any{"path": "b.txt", "content": "1"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "2", "mode": "overwrite"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "3", "mode": "append"})
			if n := len(list(c.ok("rw.journal_tail", map[string]any{"filter_path": "a.txt"})["entries"])); n != 3 {
				c.t.Fatalf("filter_path: %d", n)
			}
			if n := len(list(c.ok("rw.journal_tail", map[string]any{"filter_mode": "overwrite"})["entries"])); n != 1 {
				c.t.Fatalf("filter_mode: %d", n)
			}
		}},
		{id: "E40", run: func(c *pc) {
			ids := map[any]bool{}
			for i := range 25 {
				ids[c.ok("rw.safe_write", map[string]any{"path": fmt.Sprintf("f%d", i), "content": "x"})["journal_id"]] = true
			}
			if len(ids) != 25 {
				c.t.Fatalf("%d distinct ids", len(ids))
			}
		}},
	})
}

// TestUnsafeWorkspace is A05: a workspace of / or /usr is refused at start
// (exit 1, a message, nothing written).
func TestUnsafeWorkspace(t *testing.T) {
	t.Parallel()
	for _, ws := range []string{"/", "/usr"} {
		t.Run(ws, func(t *testing.T) {
			t.Parallel()
			cmd := apiaryCmd(t, t.TempDir(), srvOpts{noWS: true, env: map[string]string{"RW_WORKSPACE": ws}}, "mcp")
			cmd.Stdin = strings.NewReader("")
			err := cmd.Run()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
				t.Fatalf("exit %v (%v)", cmd.ProcessState, err)
			}
			if !strings.Contains(cmd.Stderr.(*lockedBuffer).String(), "refusing") {
				t.Fatalf("stderr %q", cmd.Stderr.(*lockedBuffer).String())
			}
			if _, err := os.Stat(filepath.Join(ws, ".apiary")); err == nil {
				t.Fatal("state written into " + ws)
			}
		})
	}
}

// assertNoTemps fails if any temp file (".tmp." in its name) is under dir.
func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp.") {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
}
