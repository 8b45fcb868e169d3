//go:build unix

package mcpserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestParityBeyond covers checklist group O: what Resilient Write gets
// wrong. O6 (SIGKILL loop) is TestCrashLoop; O8 and O9 (isError on every
// envelope, structuredContent equal to the text) are checked on every call
// of every parity case by checkResult; O10 in full is in durable's attack
// tests, with the MCP-level sample here.
func TestParityBeyond(t *testing.T) {
	t.Parallel()
	runCases(t, []parityCase{
		{id: "O1", inmem: true, run: func(c *pc) {
			const n = 16
			var wg sync.WaitGroup
			results := make([]map[string]any, n)
			for i := range n {
				wg.Go(func() {
					results[i] = c.call("rw.safe_write", map[string]any{"path": "race.txt", "content": fmt.Sprintf("writer %d\n", i)})
				})
			}
			wg.Wait()
			winners := 0
			var content string
			for i, r := range results {
				switch {
				case r["ok"] == true:
					winners++
					content = fmt.Sprintf("writer %d\n", i)
				case r["error"] != "stale_precondition" || reason(r) != "file_already_exists":
					c.t.Errorf("loser %d: %v", i, r)
				}
			}
			if winners != 1 || c.read("race.txt") != content {
				c.t.Fatalf("%d winners; file %q", winners, c.read("race.txt"))
			}
		}},
		{id: "O2", setup: func(ws string) { os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\n"), 0o755) }, run: func(c *pc) {
			os.Chmod(c.path("run.sh"), 0o755)
			c.ok("rw.safe_write", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho 1\n", "mode": "overwrite"})
			c.ok("rw.safe_write", map[string]any{"path": "run.sh", "content": "echo 2\n", "mode": "append"})
			c.ok("rw.edit", map[string]any{"path": "run.sh", "old_string": "echo 2", "new_string": "echo 3"})
			fi, err := os.Stat(c.path("run.sh"))
			if err != nil || fi.Mode().Perm() != 0o755 || c.read("run.sh") != "#!/bin/sh\necho 1\necho 3\n" {
				c.t.Fatalf("mode %v, content %q", fi.Mode(), c.read("run.sh"))
			}
		}},
		{id: "O3", inmem: true, run: func(c *pc) {
			const n = 50
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { c.ok("rw.chunk_append", map[string]any{"session": "par", "content": fmt.Sprintf("<%d>", i)}) })
			}
			wg.Wait()
			st := c.ok("rw.chunk_status", map[string]any{"session": "par"})
			if len(list(st["present_indices"])) != n {
				c.t.Fatalf("%d parts", len(list(st["present_indices"])))
			}
			c.ok("rw.chunk_compose", map[string]any{"session": "par", "output_path": "par.txt"})
			out := c.read("par.txt")
			for i := range n {
				if !strings.Contains(out, fmt.Sprintf("<%d>", i)) {
					c.t.Errorf("part %d lost", i)
				}
			}
		}},
		{id: "O4", run: func(c *pc) {
			// All four alignments of the 512 KiB slice boundaries are
			// covered in-process by durable's TestCheckpointMultibyte; over
			// MCP one payload proves the round trip.
			s := "a" + strings.Repeat("😀é€", 120_000)
			r := c.ok("rw.checkpoint", map[string]any{"name": "mb", "data": s})
			if r["chunked"] != true {
				c.t.Fatalf("not above the chunk threshold: %v", r["bytes"])
			}
			if got := c.ok("rw.checkpoint_read", map[string]any{"name": "mb"})["data"]; got != s {
				c.t.Fatalf("multibyte data changed (%d vs %d chars)", len([]rune(fmt.Sprint(got))), len([]rune(s)))
			}
		}},
		{id: "O5", inmem: true, run: func(c *pc) {
			args := map[string]any{"path": "k.txt", "content": OAT + "\n" + GHO + "\n", "classify": true}
			for _, want := range []float64{3, 2, 1, 0} {
				if e := c.fail("rw.safe_write", args, "blocked", "content_filter"); num(e["retry_budget"]) != want {
					c.t.Fatalf("budget %v, want %v", e["retry_budget"], want)
				}
			}
			q := c.fail("rw.safe_write", args, "quota_exceeded", "content_filter")
			if q["suggested_action"] != "ask_user" || num(obj(q["context"])["attempts"]) != 4 {
				c.t.Fatalf("exhausted %v", q)
			}
			changed := map[string]any{"path": "k.txt", "content": OAT + "\n" + GHO + "\nchanged\n", "classify": true}
			if e := c.fail("rw.safe_write", changed, "blocked", ""); num(e["retry_budget"]) != 3 {
				c.t.Fatalf("changed content: %v", e)
			}
			c.ok("rw.safe_write", map[string]any{"path": "k.txt", "content": "clean\n", "classify": true})
			if e := c.fail("rw.safe_write", changed, "blocked", ""); num(e["retry_budget"]) != 3 {
				c.t.Fatalf("after success: %v", e)
			}
		}},
		{id: "O7", setup: func(ws string) {
			os.MkdirAll(filepath.Join(ws, "d"), 0o755)
			os.WriteFile(filepath.Join(ws, "d", ".x.txt.tmp.999999999.0123456789ab"), []byte("partial"), 0o644)
			os.WriteFile(filepath.Join(ws, ".y.txt.tmp.999999998.abcdefabcdef"), []byte("partial"), 0o644)
			os.WriteFile(filepath.Join(ws, "keep.tmp.notours"), []byte("user file"), 0o644)
		}, run: func(c *pc) {
			if c.exists("d/.x.txt.tmp.999999999.0123456789ab") || c.exists(".y.txt.tmp.999999998.abcdefabcdef") {
				c.t.Fatal("orphan temps not swept")
			}
			if !c.exists("keep.tmp.notours") {
				c.t.Fatal("swept a file that is not ours")
			}
		}},
		{id: "O10", setup: plantAttacks, run: func(c *pc) {
			for _, p := range []string{"../x", "a/../../x", "/etc/passwd", "//etc/passwd", c.ws + "/abs.txt", "../" + filepath.Base(c.ws) + "_evil/f.txt",
				"link", "dirlink/new.txt", "dangle", "a\x00b", c.state + "/journal.jsonl"} {
				for _, mode := range []string{"create", "overwrite", "append"} {
					c.fail("rw.safe_write", map[string]any{"path": p, "content": "pwned", "mode": mode}, "policy_violation", "permission")
				}
				c.fail("rw.read", map[string]any{"path": p}, "policy_violation", "permission")
			}
			c.fail("rw.handoff_read", map[string]any{"path": "dirlink/HANDOFF.md"}, "policy_violation", "permission")
			c.ok("rw.chunk_write", map[string]any{"session": "s", "index": 1, "content": "x"})
			c.fail("rw.chunk_compose", map[string]any{"session": "s", "output_path": "dirlink/out.txt"}, "policy_violation", "permission")
			c.fail("rw.move", map[string]any{"from": "inside.txt", "to": "dirlink/stolen.txt"}, "policy_violation", "permission")
			if got, _ := os.ReadFile(filepath.Join(filepath.Dir(c.ws), "outside", "secret")); string(got) != "secret\n" {
				c.t.Fatalf("outside file changed: %q", got)
			}
			assertEmptyExcept(c.t, filepath.Join(filepath.Dir(c.ws), "outside"), "secret")
		}},
		{id: "O10-allowed", setup: plantAttacks, run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "alias", "content": "via alias\n", "mode": "overwrite"})
			if r["path"] != "real" || c.read("real") != "via alias\n" {
				c.t.Fatalf("alias %v", r)
			}
			if fi, _ := os.Lstat(c.path("alias")); fi.Mode()&os.ModeSymlink == 0 {
				c.t.Fatal("alias is no longer a link")
			}
			c.ok("rw.safe_write", map[string]any{"path": "a/../b.txt", "content": "b"})
			c.ok("rw.safe_write", map[string]any{"path": "~/x", "content": "tilde"})
			if c.read("~/x") != "tilde" {
				c.t.Fatal("~ was expanded")
			}
			c.fail("rw.safe_write", map[string]any{"path": "sub", "content": "x", "mode": "overwrite"}, "policy_violation", "")
		}},
		{id: "O11", skip: []string{inMemory, stdio}, run: func(c *pc) {
			big := strings.Repeat("0123456789abcdef", 5<<16) // 5 MiB
			q := c.fail("rw.safe_write", map[string]any{"path": "big.txt", "content": big}, "quota_exceeded", "size_limit")
			if q["suggested_action"] != "split" || reason(q) != "request_too_large" {
				c.t.Fatalf("5 MiB write: %v", q)
			}
			for i := 0; i < len(big); i += 1 << 20 {
				c.ok("rw.chunk_append", map[string]any{"session": "big", "content": big[i : i+1<<20]})
			}
			c.ok("rw.chunk_compose", map[string]any{"session": "big", "output_path": "big.txt", "cleanup": true})
			if c.read("big.txt") != big {
				c.t.Fatal("chunked content differs")
			}
		}},
	})
}

// plantAttacks builds the reference's attack fixtures around a workspace:
// an outside directory with a secret, a sibling W_evil, links leading out,
// a dangling link, an inside alias, a directory "sub".
func plantAttacks(ws string) {
	parent := filepath.Dir(ws)
	out := filepath.Join(parent, "outside")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "secret"), []byte("secret\n"), 0o644)
	os.MkdirAll(ws+"_evil", 0o755)
	os.Symlink(filepath.Join(out, "secret"), filepath.Join(ws, "link"))
	os.Symlink(out, filepath.Join(ws, "dirlink"))
	os.Symlink(filepath.Join(out, "nonexist"), filepath.Join(ws, "dangle"))
	os.WriteFile(filepath.Join(ws, "real"), []byte("real\n"), 0o644)
	os.Symlink(filepath.Join(ws, "real"), filepath.Join(ws, "alias"))
	os.WriteFile(filepath.Join(ws, "inside.txt"), []byte("inside\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
}

// assertEmptyExcept fails if dir holds anything but the named entries.
func assertEmptyExcept(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		found := false
		for _, n := range names {
			found = found || e.Name() == n
		}
		if !found {
			t.Errorf("%s appeared in %s", e.Name(), dir)
		}
	}
}
