//go:build unix

package mcpserver_test

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestParityCheckpoints covers checklist group L.
func TestParityCheckpoints(t *testing.T) {
	t.Parallel()
	cp := func(c *pc, name string, data any, extra map[string]any) map[string]any {
		args := map[string]any{"name": name, "data": data}
		for k, v := range extra {
			args[k] = v
		}
		return c.ok("rw.checkpoint", args)
	}
	runCases(t, []parityCase{
		{id: "L162-169", inmem: true, opts: srvOpts{compat: true}, run: func(c *pc) {
			data := map[string]any{"papers": []any{map[string]any{"id": 1.0, "title": "ünïcode"}}, "n": 2.5}
			r := cp(c, "analyses", data, map[string]any{"format": "json", "ttl": "session"})
			if r["checkpoint_path"] != ".resilient_write/checkpoints/analyses.json" || r["chunked"] != false {
				c.t.Fatalf("save %v", r)
			}
			rd := c.ok("rw.checkpoint_read", map[string]any{"name": "analyses"})
			if !reflect.DeepEqual(rd["data"], data) || rd["format"] != "json" || rd["ttl"] != "session" {
				c.t.Fatalf("read %v", rd)
			}
			a := cp(c, "v", map[string]any{"v": 1.0}, nil)
			b := cp(c, "v", map[string]any{"v": 2.0}, nil)
			if b["created_at"] != a["created_at"] || num(obj(c.ok("rw.checkpoint_read", map[string]any{"name": "v"})["data"])["v"]) != 2 {
				c.t.Fatalf("overwrite %v %v", a, b)
			}
			c.fail("rw.checkpoint_read", map[string]any{"name": "nope"}, "stale_precondition", "")
			c.fail("rw.checkpoint", map[string]any{"name": "bad name!", "data": 1}, "policy_violation", "")
			c.fail("rw.checkpoint", map[string]any{"name": "n", "data": 1, "ttl": "bogus"}, "policy_violation", "")
			cp(c, "y", map[string]any{"k": "v"}, map[string]any{"format": "yaml"})
			if rd := c.ok("rw.checkpoint_read", map[string]any{"name": "y"}); rd["format"] != "yaml" || obj(rd["data"])["k"] != "v" {
				c.t.Fatalf("yaml %v", rd)
			}
			l := c.ok("rw.checkpoint_list", nil)
			var names []string
			for _, e := range list(l["checkpoints"]) {
				names = append(names, obj(e)["name"].(string))
			}
			if num(l["count"]) != 3 || !slices.Equal(names, []string{"analyses", "v", "y"}) {
				c.t.Fatalf("list %v", l)
			}
		}},
		{id: "L169", run: func(c *pc) {
			if l := c.ok("rw.checkpoint_list", nil); num(l["count"]) != 0 {
				c.t.Fatalf("fresh list %v", l)
			}
		}},
		{id: "L170-171", run: func(c *pc) {
			c.ok("rw.chunk_append", map[string]any{"session": "report", "content": "Part 1\n"})
			c.ok("rw.chunk_append", map[string]any{"session": "report", "content": "Part 2\n"})
			cp(c, "interim", map[string]any{"papers": 9}, nil)
			if st := c.ok("rw.chunk_status", map[string]any{"session": "report"}); fmt.Sprint(st["present_indices"]) != "[1 2]" {
				c.t.Fatalf("status %v", st)
			}
			if rd := c.ok("rw.checkpoint_read", map[string]any{"name": "interim"}); num(obj(rd["data"])["papers"]) != 9 {
				c.t.Fatalf("read %v", rd)
			}
			c.ok("rw.chunk_compose", map[string]any{"session": "report", "output_path": "r.txt", "cleanup": true})
			if c.read("r.txt") != "Part 1\nPart 2\n" {
				c.t.Fatal("compose")
			}
			c.ok("rw.chunk_append", map[string]any{"session": "mysess", "content": "x"})
			cp(c, "mysess", map[string]any{"x": 1}, nil)
			if st := c.ok("rw.chunk_status", map[string]any{"session": "mysess"}); fmt.Sprint(st["present_indices"]) != "[1]" {
				c.t.Fatalf("independent %v", st)
			}
		}},
		{id: "L172-176", run: func(c *pc) {
			cp(c, "ephemeral", 1, map[string]any{"ttl": "session"})
			cp(c, "keeper", 1, map[string]any{"ttl": "permanent"})
			cp(c, "year", 1, map[string]any{"ttl": "P365D"})
			if r := c.ok("rw.checkpoint_cleanup", map[string]any{"include_session": false}); len(list(r["removed"])) != 0 || num(r["kept"]) != 3 {
				c.t.Fatalf("keep session %v", r)
			}
			r := c.ok("rw.checkpoint_cleanup", map[string]any{"include_session": true})
			rm := list(r["removed"])
			if len(rm) != 1 || obj(rm[0])["name"] != "ephemeral" || obj(rm[0])["reason"] != "session_cleanup" || num(r["kept"]) != 2 {
				c.t.Fatalf("cleanup %v", r)
			}
			if l := c.ok("rw.checkpoint_list", nil); num(l["count"]) != 2 {
				c.t.Fatalf("list %v", l)
			}
		}},
		{id: "L176", run: func(c *pc) {
			if r := c.ok("rw.checkpoint_cleanup", nil); num(r["kept"]) != 0 || len(list(r["removed"])) != 0 {
				c.t.Fatalf("fresh cleanup %v", r)
			}
		}},
		{id: "L174", opts: srvOpts{compat: true}, setup: func(ws string) {
			writePolicy(ws, ".resilient_write/checkpoints/old.json", `{"created_at":"2020-01-01T00:00:00Z","data":1,"format":"json","name":"old","ttl":"PT1H","updated_at":"2020-01-01T00:00:00Z"}`)
		}, run: func(c *pc) {
			cp(c, "fresh", 1, map[string]any{"ttl": "permanent"})
			r := c.ok("rw.checkpoint_cleanup", nil)
			if rm := list(r["removed"]); len(rm) != 1 || obj(rm[0])["name"] != "old" || obj(rm[0])["reason"] != "expired" || c.exists(".resilient_write/checkpoints/old.json") {
				c.t.Fatalf("expired %v", r)
			}
		}},
		{id: "L177", opts: srvOpts{compat: true}, setup: func(ws string) {
			writePolicy(ws, ".resilient_write/checkpoints/broken.json", "not valid json{{{")
		}, run: func(c *pc) {
			r := c.ok("rw.checkpoint_cleanup", nil)
			if rm := list(r["removed"]); len(rm) != 1 || obj(rm[0])["reason"] != "corrupt" {
				c.t.Fatalf("corrupt %v", r)
			}
		}},
		{id: "L178-180", run: func(c *pc) {
			h := map[string]any{"task_id": "t", "status": "complete", "agent": "a", "summary": "s", "next_steps": []any{}, "last_good_state": []any{}}
			w := c.ok("rw.handoff_write", map[string]any{"envelope": h})
			if _, ok := w["checkpoint_refs"]; ok {
				c.t.Fatalf("refs without checkpoints %v", w)
			}
			if _, ok := c.ok("rw.handoff_read", nil)["checkpoint_refs"]; ok {
				c.t.Fatal("read has checkpoint_refs without checkpoints")
			}
			cp(c, "cp1", 1, nil)
			w = c.ok("rw.handoff_write", map[string]any{"envelope": h})
			if obj(list(w["checkpoint_refs"])[0])["name"] != "cp1" || obj(list(c.ok("rw.handoff_read", nil)["checkpoint_refs"])[0])["name"] != "cp1" {
				c.t.Fatalf("refs %v", w)
			}
		}},
		{id: "L181-183", run: func(c *pc) {
			var big []any
			for i := range 1200 {
				big = append(big, map[string]any{"id": float64(i), "payload": strings.Repeat("x", 1000)})
			}
			r := cp(c, "big", big, nil)
			if r["chunked"] != true || num(r["bytes"]) <= 1<<20 {
				c.t.Fatalf("big %v", r["chunked"])
			}
			rd := c.ok("rw.checkpoint_read", map[string]any{"name": "big"})
			if len(list(rd["data"])) != 1200 || num(rd["bytes"]) <= 1048576 {
				c.t.Fatal("big read")
			}
			if r := cp(c, "small", map[string]any{"a": 1}, nil); r["chunked"] != false {
				c.t.Fatalf("small %v", r)
			}
			if st := c.ok("rw.chunk_status", map[string]any{"session": "_cp_big"}); st["exists"] != false {
				c.t.Fatalf("_cp_big %v", st)
			}
		}},
		{id: "L184-186", opts: srvOpts{compat: true}, run: func(c *pc) {
			row := func(p string, n int, mode, ts string) map[string]any {
				return map[string]any{"bytes": n, "caller": "x", "journal_id": "wj_" + p + ts, "mode": mode, "path": p, "sha256": sha(p), "ts": ts}
			}
			c.seedJournal(
				row(".resilient_write/checkpoints/analysis.json", 500, "create", "2026-04-16T10:00:00Z"),
				row(".resilient_write/checkpoints/analysis.json", 600, "overwrite", "2026-04-16T14:00:00Z"),
				row(".resilient_write/checkpoints/other.json", 300, "create", "2026-04-16T14:00:00Z"),
			)
			cps := obj(c.ok("rw.analytics", nil)["checkpoints"])
			byName := obj(cps["by_name"])
			if num(cps["total_saves"]) != 3 || num(cps["overwrites"]) != 1 || num(obj(byName["analysis"])["saves"]) != 2 || num(obj(byName["analysis"])["total_bytes"]) != 1100 || num(obj(byName["other"])["saves"]) != 1 {
				c.t.Fatalf("checkpoints %v", cps)
			}
			since := obj(c.ok("rw.analytics", map[string]any{"since": "2026-04-16T12:00:00Z"})["checkpoints"])
			if num(since["total_saves"]) != 2 || num(obj(obj(since["by_name"])["analysis"])["saves"]) != 1 {
				c.t.Fatalf("since %v", since)
			}
			c.seedJournal(row("regular.txt", 1, "create", "2026-04-16T10:00:00Z"))
			cps = obj(c.ok("rw.analytics", nil)["checkpoints"])
			if num(cps["total_saves"]) != 0 || num(cps["overwrites"]) != 0 || len(obj(cps["by_name"])) != 0 {
				c.t.Fatalf("regular %v", cps)
			}
		}},
	})
}

// TestParityValidate covers checklist group M.
func TestParityValidate(t *testing.T) {
	t.Parallel()
	article := "\\documentclass{article}\n\\begin{document}\nHello \\textbf{world}.\n\\end{document}\n"
	runCases(t, []parityCase{{id: "M187-201", run: func(c *pc) {
		v := func(content string, extra map[string]any) map[string]any {
			args := map[string]any{"content": content}
			for k, x := range extra {
				args[k] = x
			}
			return c.ok("rw.validate", args)
		}
		msgs := func(r map[string]any) string {
			var b strings.Builder
			for _, e := range list(r["errors"]) {
				b.WriteString(fmt.Sprint(obj(e)["message"], "|"))
			}
			return b.String()
		}
		latex := map[string]any{"format_hint": "latex"}
		if r := v(article, latex); r["valid"] != true || len(list(r["errors"])) != 0 {
			c.t.Errorf("187: %v", r)
		}
		if r := v("{hello", latex); r["valid"] != false || !strings.Contains(strings.ToLower(msgs(r)), "brace") {
			c.t.Errorf("188: %v", r)
		}
		if r := v("{a{b{c}d}e}", latex); strings.Contains(strings.ToLower(msgs(r)), "brace") {
			c.t.Errorf("193: %v", r)
		}
		if r := v("\\begin{itemize}\n\\item x\n", latex); !strings.Contains(msgs(r), "itemize") || !strings.Contains(msgs(r), "never closed") {
			c.t.Errorf("189: %v", r)
		}
		if r := v("\\begin{itemize}\n\\end{enumerate}\n", latex); !strings.Contains(msgs(r), "mismatch") {
			c.t.Errorf("190: %v", r)
		}
		if r := v("\\begin{document}\nx\n\\end{document}\n", latex); !strings.Contains(msgs(r), "documentclass") {
			c.t.Errorf("191: %v", r)
		}
		if r := v("\\being{document}\nHello\n", latex); !strings.Contains(msgs(r), "being") {
			c.t.Errorf("192: %v", r)
		}
		if r := v(`{"key": "value"}`, map[string]any{"format_hint": "json"}); r["valid"] != true || len(list(r["errors"])) != 0 {
			c.t.Errorf("194: %v", r)
		}
		r := v(`{"key":}`, map[string]any{"format_hint": "json"})
		if errs := list(r["errors"]); r["valid"] != false || len(errs) != 1 || obj(errs[0])["severity"] != "error" || obj(errs[0])["line"] == nil {
			c.t.Errorf("195: %v", r)
		}
		if r := v("def foo(): pass", map[string]any{"format_hint": "python"}); r["valid"] != true {
			c.t.Errorf("196: %v", r)
		}
		if r := v("def foo(", map[string]any{"format_hint": "python"}); r["valid"] != false || len(list(r["errors"])) != 1 {
			c.t.Errorf("197: %v", r)
		}
		if r := v(`{"auto": true}`, nil); r["format"] != "json" || r["valid"] != true {
			c.t.Errorf("198: %v", r)
		}
		if r := v("def foo(): pass", map[string]any{"target_path": "foo.py"}); r["format"] != "python" || r["valid"] != true {
			c.t.Errorf("199: %v", r)
		}
		if r := v("just plain text", nil); r["format"] != "unknown" || r["valid"] != true || len(list(r["errors"])) != 0 {
			c.t.Errorf("200: %v", r)
		}
		for _, h := range []any{"latex", "json", "python", nil} {
			args := map[string]any{}
			if h != nil {
				args["format_hint"] = h
			}
			v("", args) // 201: ok:true for every hint, never an envelope
		}
		for _, tc := range []struct{ hint, bad, good string }{
			{"yaml", "a: [1, 2\n", "a: [1, 2]\n"},
			{"toml", "a = \n", "a = 1\n"},
			{"go", "package p\nfunc f( {\n", "package p\nfunc f() {}\n"},
			{"markdown", "# t\n```go\nx\n", "# t\n```go\nx\n```\n"},
		} {
			if r := v(tc.bad, map[string]any{"format_hint": tc.hint}); r["valid"] != false || obj(list(r["errors"])[0])["line"] == nil {
				c.t.Errorf("%s bad: %v", tc.hint, r)
			}
			if r := v(tc.good, map[string]any{"format_hint": tc.hint}); r["valid"] != true {
				c.t.Errorf("%s good: %v", tc.hint, r)
			}
		}
	}}})
}

// TestParityAnalytics covers checklist group N (journal pre-seeded by hand).
func TestParityAnalytics(t *testing.T) {
	t.Parallel()
	row := func(p, mode, ts string, n int) map[string]any {
		return map[string]any{"bytes": n, "caller": "resilient-write", "journal_id": "wj_" + ts + p, "mode": mode, "path": p, "sha256": sha(p), "ts": ts}
	}
	an := func(c *pc, args map[string]any) map[string]any { return c.ok("rw.analytics", args) }
	runCases(t, []parityCase{
		{id: "N202-204", opts: srvOpts{compat: true}, run: func(c *pc) {
			if r := an(c, nil); num(r["total_writes"]) != 0 || num(r["unique_paths"]) != 0 || num(r["total_bytes_written"]) != 0 {
				c.t.Fatalf("empty %v", r)
			}
			c.seedJournal(row("file0", "create", "2026-04-16T17:00:00Z", 1), row("file1", "overwrite", "2026-04-16T17:00:00Z", 1), row("file2", "append", "2026-04-16T17:00:00Z", 1))
			r := an(c, nil)
			bm := obj(r["by_mode"])
			if num(r["total_writes"]) != 3 || num(r["unique_paths"]) != 3 || num(bm["create"]) != 1 || num(bm["overwrite"]) != 1 || num(bm["append"]) != 1 {
				c.t.Fatalf("3 rows %v", r)
			}
		}},
		{id: "N205-206", opts: srvOpts{compat: true}, run: func(c *pc) {
			var rows []map[string]any
			for range 5 {
				rows = append(rows, row("hot.txt", "overwrite", "2026-04-16T17:00:00Z", 2))
			}
			for i := 1; i <= 3; i++ {
				rows = append(rows, row(fmt.Sprintf(".resilient_write/chunks/my-sess/part-%03d.txt", i), "overwrite", "2026-04-16T17:00:00Z", 1))
			}
			c.seedJournal(rows...)
			r := an(c, nil)
			hp := obj(list(r["hot_paths"])[0])
			if hp["path"] != "hot.txt" || num(hp["write_count"]) != 5 || num(obj(obj(r["sessions"])["my-sess"])["chunk_writes"]) != 3 {
				c.t.Fatalf("got %v", r)
			}
		}},
		{id: "N207-208", inmem: true, opts: srvOpts{compat: true}, run: func(c *pc) {
			c.seedJournal(row("old.txt", "create", "2026-04-16T16:00:00Z", 1), row("new.txt", "create", "2026-04-16T18:00:00Z", 1))
			r := an(c, map[string]any{"since": "2026-04-16T17:00:00Z"})
			if num(r["total_writes"]) != 1 || len(list(r["hot_paths"])) != 1 || obj(list(r["hot_paths"])[0])["path"] != "new.txt" {
				c.t.Fatalf("since %v", r)
			}
			c.seedJournal(row("a", "create", "2026-04-16T17:00:00Z", 1), row("b", "create", "2026-04-16T17:01:00Z", 1), row("c", "create", "2026-04-16T17:02:00Z", 1))
			if w := num(obj(an(c, nil)["write_velocity"])["writes_per_minute"]); math.Abs(w-1.5) > 0.01 {
				c.t.Fatalf("velocity %v", w)
			}
			c.fail("rw.analytics", map[string]any{"since": "yesterday"}, "policy_violation", "encoding")
		}},
		{id: "N209", run: func(c *pc) {
			if r := an(c, nil); num(r["total_writes"]) != 0 {
				c.t.Fatalf("no state %v", r)
			}
		}},
		{id: "N210-211", opts: srvOpts{compat: true}, run: func(c *pc) {
			c.seedJournal(row("a", "create", "2026-04-16T17:00:00Z", 1), row("b", "create", "2026-04-16T17:05:00Z", 1))
			p := obj(an(c, nil)["period"])
			if p["first_entry"] != "2026-04-16T17:00:00Z" || p["last_entry"] != "2026-04-16T17:05:00Z" || num(p["duration_seconds"]) != 300 {
				c.t.Fatalf("period %v", p)
			}
			c.seedJournal(
				row(".resilient_write/chunks/alpha/part-001.txt", "overwrite", "2026-04-16T17:00:00Z", 1),
				row(".resilient_write/chunks/beta/part-001.txt", "overwrite", "2026-04-16T17:00:00Z", 1),
			)
			s := obj(an(c, map[string]any{"session_filter": "alpha"})["sessions"])
			if _, ok := s["alpha"]; !ok || len(s) != 1 {
				c.t.Fatalf("filter %v", s)
			}
		}},
	})
}
