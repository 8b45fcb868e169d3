//go:build unix

package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

func rwCheckpointCases() []rwCase {
	const f = "test_checkpoint.py::"
	save := func(c *pc, name string, data any, extra map[string]any) map[string]any {
		c.t.Helper()
		a := map[string]any{"name": name, "data": data}
		for k, v := range extra {
			a[k] = v
		}
		return c.ok("rw.checkpoint", a)
	}
	read := func(c *pc, name string) map[string]any {
		c.t.Helper()
		return c.ok("rw.checkpoint_read", map[string]any{"name": name})
	}
	env := func(task, status string, steps []any) map[string]any {
		return map[string]any{"task_id": task, "status": status, "agent": "test", "summary": "test", "next_steps": steps, "last_good_state": []any{}}
	}
	large := func() map[string]any {
		var es []any
		for i := range 1200 {
			es = append(es, map[string]any{"id": i, "payload": strings.Repeat("x", 1000)})
		}
		return map[string]any{"entries": es}
	}
	cpFile := func(name, body string) func(ws string) {
		return func(ws string) {
			os.MkdirAll(filepath.Join(ws, ".resilient_write/checkpoints"), 0o755)
			os.WriteFile(filepath.Join(ws, ".resilient_write/checkpoints", name), []byte(body), 0o644)
		}
	}
	same := func(a, b any) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		var x, y any
		json.Unmarshal(ja, &x)
		json.Unmarshal(jb, &y)
		return reflect.DeepEqual(x, y)
	}
	names := func(m map[string]any, key string) []string {
		var out []string
		for _, e := range list(m[key]) {
			out = append(out, fmt.Sprint(obj(e)["name"]))
		}
		slices.Sort(out)
		return out
	}
	return []rwCase{
		{id: f + "TestCheckpointRoundTrip::test_save_and_read", run: func(c *pc) {
			data := map[string]any{"paper_1": map[string]any{"score": 11.5, "summary": "Great"}, "paper_2": map[string]any{"score": 8.5}}
			if r := save(c, "analyses", data, map[string]any{"format": "json", "ttl": "session"}); r["name"] != "analyses" {
				c.t.Fatal(r)
			}
			r := read(c, "analyses")
			if !same(r["data"], data) || r["format"] != "json" || r["ttl"] != "session" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointRoundTrip::test_overwrite_preserves_created_at", run: func(c *pc) {
			save(c, "ow", map[string]any{"v": 1}, nil)
			r1 := read(c, "ow")
			save(c, "ow", map[string]any{"v": 2}, nil)
			r2 := read(c, "ow")
			if num(obj(r2["data"])["v"]) != 2 || r2["created_at"] != r1["created_at"] {
				c.t.Fatal(r1, r2)
			}
		}},
		{id: f + "TestCheckpointRoundTrip::test_read_nonexistent_raises", run: func(c *pc) {
			c.fail("rw.checkpoint_read", map[string]any{"name": "nope"}, "stale_precondition", "")
		}},
		{id: f + "TestCheckpointRoundTrip::test_invalid_name_raises", run: func(c *pc) {
			c.fail("rw.checkpoint", map[string]any{"name": "bad name!", "data": map[string]any{}}, "policy_violation", "")
		}},
		{id: f + "TestCheckpointRoundTrip::test_invalid_ttl_raises", run: func(c *pc) {
			c.fail("rw.checkpoint", map[string]any{"name": "ok", "data": map[string]any{}, "ttl": "bogus"}, "policy_violation", "")
		}},
		{id: f + "TestCheckpointRoundTrip::test_yaml_format", run: func(c *pc) {
			data := map[string]any{"key": "value", "list": []any{1, 2, 3}}
			save(c, "yml", data, map[string]any{"format": "yaml"})
			if r := read(c, "yml"); !same(r["data"], data) || r["format"] != "yaml" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointRoundTrip::test_list_checkpoints", run: func(c *pc) {
			save(c, "cp1", map[string]any{"a": 1}, nil)
			save(c, "cp2", map[string]any{"b": 2}, nil)
			r := c.ok("rw.checkpoint_list", nil)
			if num(r["count"]) != 2 || !slices.Equal(names(r, "checkpoints"), []string{"cp1", "cp2"}) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointRoundTrip::test_list_empty", run: func(c *pc) {
			if r := c.ok("rw.checkpoint_list", nil); num(r["count"]) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointConcurrentChunks::test_checkpoint_during_active_chunk_session", run: func(c *pc) {
			cw(c, "report", 1, "Part 1\n", nil)
			cw(c, "report", 2, "Part 2\n", nil)
			save(c, "interim", map[string]any{"papers": 9}, nil)
			if st := c.ok("rw.chunk_status", map[string]any{"session": "report"}); fmt.Sprint(st["present_indices"]) != "[1 2]" {
				c.t.Fatal(st)
			}
			if r := read(c, "interim"); num(obj(r["data"])["papers"]) != 9 {
				c.t.Fatal(r)
			}
			c.ok("rw.chunk_compose", map[string]any{"session": "report", "output_path": "report.txt", "cleanup": true})
			if c.read("report.txt") != "Part 1\nPart 2\n" {
				c.t.Fatal(c.read("report.txt"))
			}
		}},
		{id: f + "TestCheckpointConcurrentChunks::test_checkpoint_chunked_session_names_dont_collide", run: func(c *pc) {
			cw(c, "mysess", 1, "A", nil)
			save(c, "mysess", map[string]any{"x": 1}, nil)
			if st := c.ok("rw.chunk_status", map[string]any{"session": "mysess"}); fmt.Sprint(st["present_indices"]) != "[1]" {
				c.t.Fatal(st)
			}
			if r := read(c, "mysess"); !same(r["data"], map[string]any{"x": 1}) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointCleanup::test_cleanup_session_checkpoints", run: func(c *pc) {
			save(c, "ephemeral", map[string]any{}, map[string]any{"ttl": "session"})
			save(c, "keeper", map[string]any{}, map[string]any{"ttl": "permanent"})
			r := c.ok("rw.checkpoint_cleanup", map[string]any{"include_session": true})
			rm := list(r["removed"])
			if len(rm) != 1 || obj(rm[0])["name"] != "ephemeral" || obj(rm[0])["reason"] != "session_cleanup" || num(r["kept"]) != 1 {
				c.t.Fatal(r)
			}
			if l := c.ok("rw.checkpoint_list", nil); num(l["count"]) != 1 || !slices.Equal(names(l, "checkpoints"), []string{"keeper"}) {
				c.t.Fatal(l)
			}
		}},
		{id: f + "TestCheckpointCleanup::test_cleanup_skip_session_when_disabled", run: func(c *pc) {
			save(c, "sess", map[string]any{}, map[string]any{"ttl": "session"})
			if r := c.ok("rw.checkpoint_cleanup", map[string]any{"include_session": false}); num(r["kept"]) != 1 || len(list(r["removed"])) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointCleanup::test_cleanup_expired_iso_duration", setup: cpFile("old.json", `{"name": "old", "format": "json", "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-01T00:00:00Z", "ttl": "PT1H", "data": {}}`), run: func(c *pc) {
			save(c, "fresh", map[string]any{}, map[string]any{"ttl": "permanent"})
			rm := names(c.ok("rw.checkpoint_cleanup", nil), "removed")
			if !slices.Contains(rm, "old") || slices.Contains(rm, "fresh") {
				c.t.Fatal(rm)
			}
		}},
		{id: f + "TestCheckpointCleanup::test_cleanup_keeps_non_expired_duration", run: func(c *pc) {
			save(c, "longttl", map[string]any{}, map[string]any{"ttl": "P365D"})
			if r := c.ok("rw.checkpoint_cleanup", nil); num(r["kept"]) != 1 || len(list(r["removed"])) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointCleanup::test_cleanup_empty_dir", run: func(c *pc) {
			if r := c.ok("rw.checkpoint_cleanup", nil); num(r["kept"]) != 0 || len(list(r["removed"])) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestCheckpointCleanup::test_cleanup_corrupt_checkpoint", setup: cpFile("broken.json", "not valid json{{{"), run: func(c *pc) {
			rm := list(c.ok("rw.checkpoint_cleanup", nil)["removed"])
			if len(rm) != 1 || obj(rm[0])["reason"] != "corrupt" {
				c.t.Fatal(rm)
			}
		}},
		{id: f + "TestCheckpointHandoffIntegration::test_handoff_write_includes_refs", run: func(c *pc) {
			save(c, "analysis", map[string]any{"score": 10}, nil)
			w := c.ok("rw.handoff_write", map[string]any{"envelope": env("t1", "partial", []any{"continue"})})
			if refs := list(w["checkpoint_refs"]); len(refs) == 0 || obj(refs[0])["name"] != "analysis" {
				c.t.Fatal(w)
			}
		}},
		{id: f + "TestCheckpointHandoffIntegration::test_handoff_read_includes_refs", run: func(c *pc) {
			save(c, "data", map[string]any{"x": 1}, nil)
			c.ok("rw.handoff_write", map[string]any{"envelope": env("t2", "partial", []any{})})
			if refs := list(c.ok("rw.handoff_read", nil)["checkpoint_refs"]); len(refs) == 0 || obj(refs[0])["name"] != "data" {
				c.t.Fatal(refs)
			}
		}},
		{id: f + "TestCheckpointHandoffIntegration::test_handoff_no_refs_when_no_checkpoints", run: func(c *pc) {
			c.ok("rw.handoff_write", map[string]any{"envelope": env("t3", "complete", []any{})})
			if r := c.ok("rw.handoff_read", nil); r["checkpoint_refs"] != nil {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestLargeCheckpointAutoChunk::test_large_checkpoint_auto_chunks", run: func(c *pc) {
			if r := save(c, "big", large(), nil); r["chunked"] != true {
				c.t.Fatal(r["chunked"])
			}
			r := read(c, "big")
			if len(list(obj(r["data"])["entries"])) != 1200 || num(r["bytes"]) <= 1<<20 {
				c.t.Fatal(r["bytes"])
			}
		}},
		{id: f + "TestLargeCheckpointAutoChunk::test_small_checkpoint_not_chunked", run: func(c *pc) {
			if r := save(c, "small", map[string]any{"a": 1}, nil); r["chunked"] != false {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestLargeCheckpointAutoChunk::test_large_checkpoint_cleanup_after_compose", run: func(c *pc) {
			save(c, "clean", large(), nil)
			if st := c.ok("rw.chunk_status", map[string]any{"session": "_cp_clean"}); st["exists"] != false {
				c.t.Fatal(st)
			}
		}},
		{id: f + "TestAnalyticsCheckpointTracking::test_analytics_detects_checkpoint_saves", run: func(c *pc) {
			c.journalEntry(".resilient_write/checkpoints/analysis.json", "abc123", 500, "create", "2026-04-16T12:00:00Z")
			c.journalEntry(".resilient_write/checkpoints/analysis.json", "abc123", 600, "overwrite", "2026-04-16T12:05:00Z")
			c.journalEntry(".resilient_write/checkpoints/other.json", "abc123", 300, "create", "2026-04-16T12:10:00Z")
			cp := obj(c.ok("rw.analytics", nil)["checkpoints"])
			by := obj(cp["by_name"])
			if num(cp["total_saves"]) != 3 || num(cp["overwrites"]) != 1 || num(obj(by["analysis"])["saves"]) != 2 ||
				num(obj(by["analysis"])["total_bytes"]) != 1100 || num(obj(by["other"])["saves"]) != 1 {
				c.t.Fatal(cp)
			}
		}},
		{id: f + "TestAnalyticsCheckpointTracking::test_analytics_no_checkpoints", run: func(c *pc) {
			c.journalEntry("regular.txt", "abc123", 100, "create", "2026-04-16T12:00:00Z")
			cp := obj(c.ok("rw.analytics", nil)["checkpoints"])
			if num(cp["total_saves"]) != 0 || num(cp["overwrites"]) != 0 || len(obj(cp["by_name"])) != 0 {
				c.t.Fatal(cp)
			}
		}},
		{id: f + "TestAnalyticsCheckpointTracking::test_analytics_checkpoint_with_since_filter", run: func(c *pc) {
			c.journalEntry(".resilient_write/checkpoints/old.json", "abc123", 100, "create", "2026-04-16T10:00:00Z")
			c.journalEntry(".resilient_write/checkpoints/new.json", "abc123", 100, "create", "2026-04-16T14:00:00Z")
			cp := obj(c.ok("rw.analytics", map[string]any{"since": "2026-04-16T12:00:00Z"})["checkpoints"])
			by := obj(cp["by_name"])
			if num(cp["total_saves"]) != 1 || by["new"] == nil || by["old"] != nil {
				c.t.Fatal(cp)
			}
		}},
	}
}

func rwFeatureCases() []rwCase {
	const f = "test_new_features.py::"
	validate := func(c *pc, content string, hint any, target any) map[string]any {
		c.t.Helper()
		a := map[string]any{"content": content}
		if hint != nil {
			a["format_hint"] = hint
		}
		if target != nil {
			a["target_path"] = target
		}
		return c.ok("rw.validate", a)
	}
	msgs := func(r map[string]any, severity string) []string {
		var out []string
		for _, e := range list(r["errors"]) {
			if obj(e)["severity"] == severity {
				out = append(out, fmt.Sprint(obj(e)["message"]))
			}
		}
		return out
	}
	anyMsg := func(ms []string, pred func(string) bool) bool { return slices.ContainsFunc(ms, pred) }
	analytics := func(c *pc, args map[string]any) map[string]any { c.t.Helper(); return c.ok("rw.analytics", args) }
	je := func(c *pc, path, ts string) { c.journalEntry(path, "abc123", 100, "create", ts) }
	return []rwCase{
		{id: f + "TestValidateLatex::test_validate_valid_latex", run: func(c *pc) {
			r := validate(c, "\\documentclass{article}\n\\begin{document}\nHello world.\n\\end{document}\n", "latex", nil)
			if r["valid"] != true || r["format"] != "latex" || len(msgs(r, "error")) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateLatex::test_validate_latex_unmatched_brace", run: func(c *pc) {
			r := validate(c, "{hello", "latex", nil)
			if r["valid"] != false || !anyMsg(msgs(r, "error"), func(m string) bool { return strings.Contains(strings.ToLower(m), "brace") }) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateLatex::test_validate_latex_unmatched_env", run: func(c *pc) {
			r := validate(c, "\\begin{itemize}\n\\item hello\n", "latex", nil)
			if r["valid"] != false || !anyMsg(msgs(r, "error"), func(m string) bool { return strings.Contains(m, "itemize") && strings.Contains(m, "never closed") }) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateLatex::test_validate_latex_mismatched_env", run: func(c *pc) {
			r := validate(c, "\\begin{itemize}\n\\item hello\n\\end{enumerate}\n", "latex", nil)
			if r["valid"] != false || !anyMsg(msgs(r, "error"), func(m string) bool { return strings.Contains(strings.ToLower(m), "mismatch") }) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateLatex::test_validate_latex_missing_documentclass", run: func(c *pc) {
			r := validate(c, "\\begin{document}\nHello\n\\end{document}\n", "latex", nil)
			if !anyMsg(msgs(r, "warning"), func(m string) bool { return strings.Contains(m, "documentclass") }) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateLatex::test_validate_latex_begin_typo", run: func(c *pc) {
			r := validate(c, "\\being{document}\nHello\n", "latex", nil)
			if !anyMsg(msgs(r, "warning"), func(m string) bool { return strings.Contains(strings.ToLower(m), "being") }) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateLatex::test_validate_latex_nested_braces", run: func(c *pc) {
			r := validate(c, "{a{b{c}d}e}", "latex", nil)
			if anyMsg(msgs(r, "error"), func(m string) bool { return strings.Contains(strings.ToLower(m), "brace") }) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateJson::test_validate_valid_json", run: func(c *pc) {
			if r := validate(c, `{"key": "value"}`, "json", nil); r["valid"] != true || r["format"] != "json" || len(list(r["errors"])) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateJson::test_validate_invalid_json", run: func(c *pc) {
			r := validate(c, `{"key":}`, "json", nil)
			es := list(r["errors"])
			if r["valid"] != false || len(es) != 1 || obj(es[0])["severity"] != "error" || obj(es[0])["line"] == nil {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidatePython::test_validate_valid_python", run: func(c *pc) {
			if r := validate(c, "def foo(): pass", "python", nil); r["valid"] != true || r["format"] != "python" || len(list(r["errors"])) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidatePython::test_validate_invalid_python", run: func(c *pc) {
			r := validate(c, "def foo(", "python", nil)
			es := list(r["errors"])
			if r["valid"] != false || len(es) != 1 || obj(es[0])["severity"] != "error" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateAutodetect::test_validate_autodetect_json", run: func(c *pc) {
			if r := validate(c, `{"auto": true}`, nil, nil); r["format"] != "json" || r["valid"] != true {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateAutodetect::test_validate_autodetect_by_extension", run: func(c *pc) {
			if r := validate(c, "def foo(): pass", nil, "foo.py"); r["format"] != "python" || r["valid"] != true {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateAutodetect::test_validate_unknown_format", run: func(c *pc) {
			if r := validate(c, "just plain text", nil, nil); r["format"] != "unknown" || r["valid"] != true || len(list(r["errors"])) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestValidateAutodetect::test_validate_empty_content", run: func(c *pc) {
			for _, hint := range []any{"latex", "json", "python", nil} {
				validate(c, "", hint, nil)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_empty_journal", run: func(c *pc) {
			c.write(".resilient_write/journal.jsonl", "")
			r := analytics(c, nil)
			if num(r["total_writes"]) != 0 || num(r["unique_paths"]) != 0 || num(r["total_bytes_written"]) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_basic_counts", run: func(c *pc) {
			for i := range 3 {
				je(c, fmt.Sprintf("file%d.txt", i), fmt.Sprintf("2026-04-12T17:0%d:00Z", i))
			}
			if r := analytics(c, nil); num(r["total_writes"]) != 3 || num(r["unique_paths"]) != 3 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_by_mode", run: func(c *pc) {
			c.journalEntry("a.txt", "abc123", 100, "create", "2026-04-12T17:00:00Z")
			c.journalEntry("a.txt", "abc123", 100, "overwrite", "2026-04-12T17:01:00Z")
			c.journalEntry("b.txt", "abc123", 100, "append", "2026-04-12T17:02:00Z")
			m := obj(analytics(c, nil)["by_mode"])
			if num(m["create"]) != 1 || num(m["overwrite"]) != 1 || num(m["append"]) != 1 {
				c.t.Fatal(m)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_hot_paths", run: func(c *pc) {
			for i := range 5 {
				je(c, "hot.txt", fmt.Sprintf("2026-04-12T17:0%d:00Z", i))
			}
			hot := list(analytics(c, nil)["hot_paths"])
			if len(hot) < 1 || obj(hot[0])["path"] != "hot.txt" || num(obj(hot[0])["write_count"]) != 5 {
				c.t.Fatal(hot)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_session_detection", run: func(c *pc) {
			for i := range 3 {
				je(c, fmt.Sprintf(".resilient_write/chunks/my-sess/part-00%d.txt", i+1), fmt.Sprintf("2026-04-12T17:0%d:00Z", i))
			}
			s := obj(obj(analytics(c, nil)["sessions"])["my-sess"])
			if num(s["chunk_writes"]) != 3 {
				c.t.Fatal(s)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_since_filter", run: func(c *pc) {
			je(c, "old.txt", "2026-04-12T16:00:00Z")
			je(c, "new.txt", "2026-04-12T18:00:00Z")
			r := analytics(c, map[string]any{"since": "2026-04-12T17:00:00Z"})
			var hot []string
			for _, h := range list(r["hot_paths"]) {
				hot = append(hot, fmt.Sprint(obj(h)["path"]))
			}
			if num(r["total_writes"]) != 1 || !slices.Contains(hot, "new.txt") || slices.Contains(hot, "old.txt") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_write_velocity", run: func(c *pc) {
			je(c, "a.txt", "2026-04-12T17:00:00Z")
			je(c, "b.txt", "2026-04-12T17:01:00Z")
			je(c, "c.txt", "2026-04-12T17:02:00Z")
			if v := num(obj(analytics(c, nil)["write_velocity"])["writes_per_minute"]); math.Abs(v-1.5) > 0.01 {
				c.t.Fatal(v)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_no_journal_file", run: func(c *pc) {
			if r := analytics(c, nil); num(r["total_writes"]) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_period", run: func(c *pc) {
			je(c, "first.txt", "2026-04-12T17:00:00Z")
			je(c, "last.txt", "2026-04-12T17:05:00Z")
			p := obj(analytics(c, nil)["period"])
			if p["first_entry"] != "2026-04-12T17:00:00Z" || p["last_entry"] != "2026-04-12T17:05:00Z" || math.Abs(num(p["duration_seconds"])-300) > 1e-9 {
				c.t.Fatal(p)
			}
		}},
		{id: f + "TestAnalytics::test_analytics_session_filter", run: func(c *pc) {
			for i := range 2 {
				je(c, fmt.Sprintf(".resilient_write/chunks/alpha/part-00%d.txt", i+1), fmt.Sprintf("2026-04-12T17:0%d:00Z", i))
			}
			for i := range 2 {
				je(c, fmt.Sprintf(".resilient_write/chunks/beta/part-00%d.txt", i+1), fmt.Sprintf("2026-04-12T17:0%d:00Z", i+2))
			}
			s := obj(analytics(c, map[string]any{"session_filter": "alpha"})["sessions"])
			if s["alpha"] == nil || s["beta"] != nil {
				c.t.Fatal(s)
			}
		}},
		{id: f + "TestChunkPreview::test_chunk_preview_basic", run: func(c *pc) {
			for i, p := range []string{"AAA", "BBB", "CCC"} {
				cw(c, "prev", i+1, p, 3)
			}
			r := c.ok("rw.chunk_preview", map[string]any{"session": "prev"})
			if r["preview"] != true || r["content"] != "AAABBBCCC" || num(r["chunk_count"]) != 3 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestChunkPreview::test_chunk_preview_contiguity_check", run: func(c *pc) {
			cw(c, "gap", 1, "A", 3)
			cw(c, "gap", 3, "C", 3)
			e := c.fail("rw.chunk_preview", map[string]any{"session": "gap"}, "stale_precondition", "")
			if reason(e) != "non_contiguous_chunks" || !slices.Contains(list(obj(e["context"])["missing"]), any(2.0)) {
				c.t.Fatal(e)
			}
		}},
		{id: f + "TestChunkPreview::test_chunk_preview_total_expected_mismatch", run: func(c *pc) {
			cw(c, "short", 1, "A", 3)
			cw(c, "short", 2, "B", 3)
			e := c.fail("rw.chunk_preview", map[string]any{"session": "short"}, "stale_precondition", "")
			ctx := obj(e["context"])
			if reason(e) != "chunk_count_mismatch" || num(ctx["have"]) != 2 || num(ctx["total_expected"]) != 3 {
				c.t.Fatal(e)
			}
		}},
		{id: f + "TestChunkPreview::test_chunk_preview_with_separator", run: func(c *pc) {
			cw(c, "sep", 1, "X", 2)
			cw(c, "sep", 2, "Y", 2)
			if r := c.ok("rw.chunk_preview", map[string]any{"session": "sep", "separator": "\n---\n"}); r["content"] != "X\n---\nY" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "TestChunkPreview::test_chunk_preview_does_not_write", run: func(c *pc) {
			cw(c, "nw", 1, "only", 1)
			before := c.tree()
			c.ok("rw.chunk_preview", map[string]any{"session": "nw"})
			if after := c.tree(); !slices.Equal(before, after) {
				c.t.Fatalf("preview changed the tree:\n%v\n%v", before, after)
			}
		}},
	}
}

// tree lists every path under the workspace (RW's rglob("*")).
func (c *pc) tree() []string {
	var out []string
	filepath.WalkDir(c.ws, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out
}
