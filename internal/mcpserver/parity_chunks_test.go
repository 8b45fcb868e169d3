//go:build unix

package mcpserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParityChunks covers checklist groups G (chunks) and H
// (chunk_preview).
func TestParityChunks(t *testing.T) {
	t.Parallel()
	w := func(c *pc, s string, i int, content string, total any) map[string]any {
		args := map[string]any{"session": s, "index": i, "content": content}
		if total != nil {
			args["total_expected"] = total
		}
		return c.ok("rw.chunk_write", args)
	}
	compose := func(c *pc, s, out string, extra map[string]any) map[string]any {
		args := map[string]any{"session": s, "output_path": out}
		for k, v := range extra {
			args[k] = v
		}
		return c.call("rw.chunk_compose", args)
	}
	runCases(t, []parityCase{
		{id: "G69-70", opts: srvOpts{compat: true}, run: func(c *pc) {
			r := w(c, "s1", 1, "alpha\n", 3)
			if r["chunk_path"] != ".resilient_write/chunks/s1/part-001.txt" || r["sha256"] != sha("alpha\n") {
				c.t.Fatalf("got %v", r)
			}
			var man map[string]any
			mustJSON(c, c.read(".resilient_write/chunks/s1/manifest.json"), &man)
			for _, k := range []string{"session", "total_expected", "created_at", "updated_at"} {
				if _, ok := man[k]; !ok {
					c.t.Errorf("manifest lacks %s: %v", k, man)
				}
			}
		}},
		{id: "G69-default", run: func(c *pc) {
			if r := w(c, "s1", 1, "alpha\n", 3); r["chunk_path"] != ".apiary/durable/chunks/s1/part-001.txt" {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "G71", run: func(c *pc) {
			w(c, "s", 2, "v1\n", nil)
			r := w(c, "s", 2, "v2\n", nil)
			if r["sha256"] != sha("v2\n") || c.read(c.state+"/chunks/s/part-002.txt") != "v2\n" {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "G72-74", run: func(c *pc) {
			for _, s := range []string{"", "has space", "with/slash", "..", strings.Repeat("a", 65)} {
				c.fail("rw.chunk_write", map[string]any{"session": s, "index": 1, "content": "x"}, "policy_violation", "")
			}
			for _, i := range []int{0, -1, 1000} {
				c.fail("rw.chunk_write", map[string]any{"session": "s", "index": i, "content": "x"}, "policy_violation", "")
			}
			e := c.fail("rw.chunk_write", map[string]any{"session": "s", "index": 5, "content": "x", "total_expected": 3}, "policy_violation", "")
			if reason(e) != "index_exceeds_total_expected" {
				c.t.Fatalf("got %v", e)
			}
		}},
		{id: "G75-76", run: func(c *pc) {
			w(c, "s", 1, "a", 3)
			w(c, "s", 2, "b", nil)
			if st := c.ok("rw.chunk_status", map[string]any{"session": "s"}); num(st["total_expected"]) != 3 {
				c.t.Fatalf("total_expected lost: %v", st)
			}
			var ps []string
			for _, r := range c.journal() {
				ps = append(ps, fmt.Sprint(r["path"]))
			}
			for _, want := range []string{c.state + "/chunks/s/part-001.txt", c.state + "/chunks/s/part-002.txt"} {
				if !slices.Contains(ps, want) {
					c.t.Errorf("journal lacks %s: %v", want, ps)
				}
			}
		}},
		{id: "G77-78", run: func(c *pc) {
			for i, s := range []string{"first", "second", "third"} {
				w(c, "s", i+1, s, 3)
			}
			r := compose(c, "s", "out.txt", nil)
			if num(r["chunk_count"]) != 3 || c.read("out.txt") != "firstsecondthird" || r["sha256"] != sha("firstsecondthird") || len(list(r["chunk_hashes"])) != 3 {
				c.t.Fatalf("got %v", r)
			}
			w(c, "t", 1, "a", nil)
			w(c, "t", 2, "b", nil)
			compose(c, "t", "sep.txt", map[string]any{"separator": "\n\n"})
			if c.read("sep.txt") != "a\n\nb" {
				c.t.Fatalf("separator: %q", c.read("sep.txt"))
			}
		}},
		{id: "G79", setup: func(ws string) { os.WriteFile(filepath.Join(ws, "out.txt"), []byte("old\n"), 0o644) }, run: func(c *pc) {
			w(c, "s", 1, "new\n", 1)
			if r := compose(c, "s", "out.txt", nil); r["ok"] != true || c.read("out.txt") != "new\n" {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "G80-82", run: func(c *pc) {
			w(c, "gap", 1, "a", 3)
			w(c, "gap", 3, "c", 3)
			e := compose(c, "gap", "o.txt", nil)
			if e["error"] != "stale_precondition" || reason(e) != "non_contiguous_chunks" || fmt.Sprint(obj(e["context"])["missing"]) != "[2]" {
				c.t.Fatalf("gap: %v", e)
			}
			w(c, "short", 1, "a", 3)
			w(c, "short", 2, "b", nil)
			e = compose(c, "short", "o.txt", nil)
			if reason(e) != "chunk_count_mismatch" || num(obj(e["context"])["have"]) != 2 || num(obj(e["context"])["total_expected"]) != 3 {
				c.t.Fatalf("short: %v", e)
			}
			if e := compose(c, "ghost", "o.txt", nil); reason(e) != "session_not_found" {
				c.t.Fatalf("ghost: %v", e)
			}
			if c.exists("o.txt") {
				c.t.Fatal("failed compose wrote output")
			}
		}},
		{id: "G83-84", run: func(c *pc) {
			w(c, "a", 1, "x", nil)
			compose(c, "a", "a.txt", map[string]any{"cleanup": true})
			if c.exists(c.state+"/chunks/a") || c.read("a.txt") != "x" {
				c.t.Fatal("cleanup did not remove the session")
			}
			w(c, "b", 1, "y", nil)
			compose(c, "b", "b.txt", nil)
			if !c.exists(c.state + "/chunks/b/part-001.txt") {
				c.t.Fatal("compose without cleanup removed parts")
			}
		}},
		{id: "G85-89", run: func(c *pc) {
			w(c, "s", 1, "a", nil)
			w(c, "s", 2, "b", nil)
			r := c.ok("rw.chunk_reset", map[string]any{"session": "s"})
			if r["existed"] != true || num(r["removed"]) < 2 || c.exists(c.state+"/chunks/s") {
				c.t.Fatalf("reset %v", r)
			}
			if r := c.ok("rw.chunk_reset", map[string]any{"session": "ghost"}); r["existed"] != false || num(r["removed"]) != 0 {
				c.t.Fatalf("reset ghost %v", r)
			}
			w(c, "g", 1, "a", 3)
			w(c, "g", 3, "c", nil)
			st := c.ok("rw.chunk_status", map[string]any{"session": "g"})
			if st["exists"] != true || num(st["total_expected"]) != 3 || fmt.Sprint(st["present_indices"]) != "[1 3]" {
				c.t.Fatalf("status %v", st)
			}
			if st := c.ok("rw.chunk_status", map[string]any{"session": "ghost"}); st["exists"] != false {
				c.t.Fatalf("ghost status %v", st)
			}
			if r := c.ok("rw.chunk_append", map[string]any{"session": "new", "content": "z"}); num(r["index"]) != 1 || !strings.HasSuffix(fmt.Sprint(r["chunk_path"]), "part-001.txt") {
				c.t.Fatalf("append %v", r)
			}
		}},
		{id: "G90-94", inmem: true, run: func(c *pc) {
			var last map[string]any
			for _, s := range []string{"A", "B", "C"} {
				last = c.ok("rw.chunk_append", map[string]any{"session": "s", "content": s})
			}
			if num(last["index"]) != 3 || last["sha256"] != sha("C") {
				c.t.Fatalf("third append %v", last)
			}
			secs := []string{"\\section{A}\n", "\\section{B}\n", "\\section{C}\n"}
			for _, s := range secs {
				c.ok("rw.chunk_append", map[string]any{"session": "tex", "content": s})
			}
			if r := compose(c, "tex", "doc.tex", nil); num(r["chunk_count"]) != 3 || c.read("doc.tex") != strings.Join(secs, "") {
				c.t.Fatalf("tex %v", r)
			}
			c.ok("rw.chunk_append", map[string]any{"session": "two", "content": "1", "total_expected": 2})
			c.ok("rw.chunk_append", map[string]any{"session": "two", "content": "2", "total_expected": 2})
			if r := compose(c, "two", "two.txt", nil); num(r["chunk_count"]) != 2 {
				c.t.Fatalf("two %v", r)
			}
			w(c, "mix", 1, "1", nil)
			if r := c.ok("rw.chunk_append", map[string]any{"session": "mix", "content": "2"}); num(r["index"]) != 2 {
				c.t.Fatalf("mix %v", r)
			}
			w(c, "gap", 1, "1", nil)
			w(c, "gap", 3, "3", nil)
			if r := c.ok("rw.chunk_append", map[string]any{"session": "gap", "content": "4"}); num(r["index"]) != 4 {
				c.t.Fatalf("gap %v", r)
			}
		}},
		{id: "G95", run: func(c *pc) {
			w(c, "s", 1, "A", 3)
			w(c, "s", 2, "B", nil)
			compose(c, "s", "out.txt", nil)
			if c.read(c.state+"/chunks/s/part-001.txt") != "A" || c.read(c.state+"/chunks/s/part-002.txt") != "B" {
				c.t.Fatal("failed compose changed parts")
			}
			w(c, "s", 3, "C", nil)
			r := compose(c, "s", "out.txt", map[string]any{"cleanup": true})
			if c.read("out.txt") != "ABC" || num(r["chunk_count"]) != 3 || c.exists(c.state+"/chunks/s") {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "H96-100", inmem: true, run: func(c *pc) {
			for i, s := range []string{"AAA", "BBB", "CCC"} {
				w(c, "p", i+1, s, 3)
			}
			before := snapshot(c.ws)
			r := c.ok("rw.chunk_preview", map[string]any{"session": "p"})
			if r["preview"] != true || r["content"] != "AAABBBCCC" || num(r["chunk_count"]) != 3 {
				c.t.Fatalf("preview %v", r)
			}
			if after := snapshot(c.ws); after != before {
				c.t.Fatalf("preview changed the workspace:\n%s\n%s", before, after)
			}
			w(c, "g", 1, "a", 3)
			w(c, "g", 3, "c", nil)
			if e := c.call("rw.chunk_preview", map[string]any{"session": "g"}); reason(e) != "non_contiguous_chunks" || fmt.Sprint(obj(e["context"])["missing"]) != "[2]" {
				c.t.Fatalf("gap %v", e)
			}
			w(c, "h", 1, "a", 2)
			if e := c.call("rw.chunk_preview", map[string]any{"session": "h"}); reason(e) != "chunk_count_mismatch" || num(obj(e["context"])["have"]) != 1 {
				c.t.Fatalf("short %v", e)
			}
			w(c, "sep", 1, "X", nil)
			w(c, "sep", 2, "Y", nil)
			if r := c.ok("rw.chunk_preview", map[string]any{"session": "sep", "separator": "\n---\n"}); r["content"] != "X\n---\nY" {
				c.t.Fatalf("sep %v", r)
			}
		}},
	})
}

// snapshot lists every file with its size and content hash.
func snapshot(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %s\n", rel, sha(string(data)))
		return nil
	})
	return b.String()
}

func mustJSON(c *pc, s string, v any) {
	c.t.Helper()
	if err := jsonUnmarshal(s, v); err != nil {
		c.t.Fatalf("%q: %v", s, err)
	}
}
