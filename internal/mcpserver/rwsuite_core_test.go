//go:build unix

package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func rwScaffoldCases() []rwCase {
	return []rwCase{
		{id: "test_scaffold.py::test_version_string", run: func(c *pc) {
			if c.cs.InitializeResult().ServerInfo.Version == "" {
				c.t.Fatal("empty serverInfo.version")
			}
		}},
		{id: "test_scaffold.py::test_build_server_returns_named_instance", run: func(c *pc) {
			if n := c.cs.InitializeResult().ServerInfo.Name; n != "resilient-write" {
				c.t.Fatalf("serverInfo.name %q", n)
			}
		}},
		{id: "test_scaffold.py::test_workspace_root_honours_env", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x"})
			if c.read("a.txt") != "x" {
				c.t.Fatal("not written under RW_WORKSPACE")
			}
		}},
		{id: "test_scaffold.py::test_workspace_root_defaults_to_cwd", opts: srvOpts{noWS: true}, run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x"})
			if c.read("a.txt") != "x" {
				c.t.Fatal("not written in the working directory")
			}
		}},
		{id: "test_scaffold.py::test_workspace_root_rejects_system_dirs", run: func(c *pc) {
			for _, dir := range []string{"/", "/usr"} {
				ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
				cmd := exec.CommandContext(ctx, apiaryBin, "mcp", "--rw-compat")
				cmd.Env = append(os.Environ(), "RW_WORKSPACE="+dir)
				out, err := cmd.CombinedOutput()
				cancel()
				if err == nil {
					c.t.Fatalf("RW_WORKSPACE=%s accepted: %s", dir, out)
				}
			}
		}},
	}
}

func rwDispatchCases() []rwCase {
	const f = "test_server_dispatch.py::"
	return []rwCase{
		{id: f + "test_dispatch_safe_write_success", run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "hi\n"})
			if r["path"] != "a.txt" || c.read("a.txt") != "hi\n" {
				c.t.Fatalf("%v", r)
			}
		}},
		{id: f + "test_dispatch_returns_typed_envelope_on_failure", run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "../escape.txt", "content": "x"}, "policy_violation", "permission")
			if obj(e["context"])["tool"] != "rw.safe_write" {
				c.t.Fatalf("%v", e)
			}
		}},
		{id: f + "test_dispatch_unknown_tool_returns_envelope", run: func(c *pc) {
			e := c.fail("rw.nope", nil, "policy_violation", "")
			if obj(e["context"])["unknown_tool"] != "rw.nope" {
				c.t.Fatalf("%v", e)
			}
		}},
		{id: f + "test_dispatch_journal_tail", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "1\n"})
			c.ok("rw.safe_write", map[string]any{"path": "b.txt", "content": "2\n"})
			es := entries(c.ok("rw.journal_tail", map[string]any{"n": 5}))
			if len(es) != 2 || !slices.Equal(sorted(es[0]["path"].(string), es[1]["path"].(string)), []string{"a.txt", "b.txt"}) {
				c.t.Fatalf("%v", es)
			}
		}},
		{id: f + "test_dispatch_chunk_round_trip", run: func(c *pc) {
			for i, piece := range []string{"one ", "two ", "three"} {
				c.ok("rw.chunk_write", map[string]any{"session": "demo", "index": i + 1, "content": piece, "total_expected": 3})
			}
			if st := c.ok("rw.chunk_status", map[string]any{"session": "demo"}); fmt.Sprint(st["present_indices"]) != "[1 2 3]" {
				c.t.Fatalf("%v", st)
			}
			r := c.ok("rw.chunk_compose", map[string]any{"session": "demo", "output_path": "out.txt", "cleanup": true})
			if num(r["chunk_count"]) != 3 || c.read("out.txt") != "one two three" {
				c.t.Fatalf("%v", r)
			}
			if r := c.ok("rw.chunk_reset", map[string]any{"session": "demo"}); r["existed"] != false {
				c.t.Fatalf("%v", r)
			}
		}},
		{id: f + "test_dispatch_chunk_invalid_session_returns_envelope", run: func(c *pc) {
			c.fail("rw.chunk_write", map[string]any{"session": "has space", "index": 1, "content": "x"}, "policy_violation", "")
		}},
		{id: f + "test_dispatch_chunk_append", run: func(c *pc) {
			if r := c.ok("rw.chunk_append", map[string]any{"session": "draft", "content": "section 1\n"}); num(r["index"]) != 1 {
				c.t.Fatalf("%v", r)
			}
			if r := c.ok("rw.chunk_append", map[string]any{"session": "draft", "content": "section 2\n"}); num(r["index"]) != 2 {
				c.t.Fatalf("%v", r)
			}
			c.ok("rw.chunk_compose", map[string]any{"session": "draft", "output_path": "draft.txt"})
			if c.read("draft.txt") != "section 1\nsection 2\n" {
				c.t.Fatal(c.read("draft.txt"))
			}
		}},
		{id: f + "test_dispatch_risk_score", run: func(c *pc) {
			r := c.ok("rw.risk_score", map[string]any{"content": "hello, just a plain note\n"})
			if r["verdict"] != "safe" || len(list(r["detected_patterns"])) != 0 {
				c.t.Fatalf("%v", r)
			}
		}},
		{id: f + "test_dispatch_scratchpad_round_trip", run: func(c *pc) {
			put := c.ok("rw.scratch_put", map[string]any{"content": "raw material\n", "label": "alpha"})
			if ref := c.ok("rw.scratch_ref", map[string]any{"sha256": put["sha256"]}); obj(ref["entry"])["label"] != "alpha" {
				c.t.Fatalf("%v", ref)
			}
			if got := c.ok("rw.scratch_get", map[string]any{"sha256": put["sha256"]}); got["content"] != "raw material\n" {
				c.t.Fatalf("%v", got)
			}
		}},
		{id: f + "test_dispatch_scratchpad_get_disabled_env", run: func(c *pc) {
			put := c.ok("rw.scratch_put", map[string]any{"content": "x\n"})
			gated := c.restart(srvOpts{env: map[string]string{"RW_SCRATCH_DISABLE_GET": "yes"}})
			gated.fail("rw.scratch_get", map[string]any{"sha256": put["sha256"]}, "policy_violation", "permission")
		}},
		{id: f + "test_dispatch_handoff_round_trip", run: func(c *pc) {
			env := map[string]any{"task_id": "t1", "status": "complete", "agent": "claude-opus-4-6", "summary": "done", "next_steps": []any{}, "last_good_state": []any{}}
			c.ok("rw.handoff_write", map[string]any{"envelope": env})
			if r := c.ok("rw.handoff_read", nil); obj(r["envelope"])["task_id"] != "t1" {
				c.t.Fatalf("%v", r)
			}
		}},
	}
}

func rwStdioCases() []rwCase {
	const f = "test_stdio_integration.py::"
	return []rwCase{
		{id: f + "test_stdio_initialize_and_list_tools", run: func(c *pc) {
			res, err := c.cs.ListTools(c.ctx, nil)
			if err != nil {
				c.t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			for _, want := range []string{"rw.safe_write", "rw.risk_score", "rw.chunk_write", "rw.scratch_put", "rw.handoff_write", "rw.journal_tail"} {
				if !slices.Contains(names, want) {
					c.t.Fatalf("%s not listed", want)
				}
			}
		}},
		{id: f + "test_stdio_safe_write_round_trip", run: func(c *pc) {
			if r := c.ok("rw.safe_write", map[string]any{"path": "notes.txt", "content": "hello from stdio\n"}); r["path"] != "notes.txt" {
				c.t.Fatalf("%v", r)
			}
			if c.read("notes.txt") != "hello from stdio\n" {
				c.t.Fatal("not on disk")
			}
			es := entries(c.ok("rw.journal_tail", map[string]any{"n": 5}))
			if len(es) != 1 || es[0]["path"] != "notes.txt" {
				c.t.Fatalf("%v", es)
			}
		}},
		{id: f + "test_stdio_risk_score_safe_content", run: func(c *pc) {
			r := c.ok("rw.risk_score", map[string]any{"content": "# heading\nharmless prose\n"})
			if r["verdict"] != "safe" || len(list(r["detected_patterns"])) != 0 {
				c.t.Fatalf("%v", r)
			}
		}},
		{id: f + "test_stdio_typed_error_envelope", run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "../escape.txt", "content": "x"}, "policy_violation", "permission")
			if e["schema_version"] != "1" || obj(e["context"])["tool"] != "rw.safe_write" {
				c.t.Fatalf("%v", e)
			}
		}},
		{id: f + "test_stdio_chunk_compose_round_trip", run: func(c *pc) {
			for i, piece := range []string{"alpha ", "bravo ", "charlie"} {
				c.ok("rw.chunk_write", map[string]any{"session": "stdio_demo", "index": i + 1, "content": piece, "total_expected": 3})
			}
			r := c.ok("rw.chunk_compose", map[string]any{"session": "stdio_demo", "output_path": "composed.txt", "cleanup": true})
			if num(r["chunk_count"]) != 3 || c.read("composed.txt") != "alpha bravo charlie" {
				c.t.Fatalf("%v", r)
			}
		}},
		{id: f + "test_stdio_scratchpad_round_trip", run: func(c *pc) {
			put := c.ok("rw.scratch_put", map[string]any{"content": "raw material\n", "label": "stdio_demo"})
			if got := c.ok("rw.scratch_get", map[string]any{"sha256": put["sha256"]}); got["content"] != "raw material\n" {
				c.t.Fatalf("%v", got)
			}
		}},
		{id: f + "test_stdio_handoff_round_trip", run: func(c *pc) {
			env := map[string]any{"task_id": "stdio-task", "status": "complete", "agent": "claude-opus-4-6", "summary": "end to end stdio smoke test", "next_steps": []any{}, "last_good_state": []any{}}
			c.ok("rw.handoff_write", map[string]any{"envelope": env})
			if r := c.ok("rw.handoff_read", nil); obj(r["envelope"])["task_id"] != "stdio-task" {
				c.t.Fatalf("%v", r)
			}
		}},
	}
}

func rwSafeWriteCases() []rwCase {
	const f = "test_safe_write.py::"
	return []rwCase{
		{id: f + "test_create_writes_file_and_journal", run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "notes.txt", "content": "hello\n"})
			if r["path"] != "notes.txt" || r["sha256"] != sha("hello\n") || num(r["bytes"]) != 6 || r["mode_applied"] != "create" || !strings.HasPrefix(fmt.Sprint(r["journal_id"]), "wj_") {
				c.t.Fatalf("%v", r)
			}
			if c.read("notes.txt") != "hello\n" {
				c.t.Fatal("content")
			}
			es := entries(c.ok("rw.journal_tail", map[string]any{"n": 10}))
			if len(es) != 1 || es[0]["path"] != "notes.txt" || es[0]["sha256"] != r["sha256"] {
				c.t.Fatalf("%v", es)
			}
		}},
		{id: f + "test_create_refuses_existing_file", setup: func(ws string) { os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old\n"), 0o644) }, run: func(c *pc) {
			c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "new\n"}, "stale_precondition", "")
			if c.read("a.txt") != "old\n" {
				c.t.Fatal("changed")
			}
		}},
		{id: f + "test_overwrite_replaces_content", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "v1\n"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "v2\n", "mode": "overwrite"})
			if c.read("a.txt") != "v2\n" || len(entries(c.ok("rw.journal_tail", map[string]any{"n": 10}))) != 2 {
				c.t.Fatal("overwrite")
			}
		}},
		{id: f + "test_append_preserves_existing_bytes", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "log.txt", "content": "line1\n"})
			r := c.ok("rw.safe_write", map[string]any{"path": "log.txt", "content": "line2\n", "mode": "append"})
			if c.read("log.txt") != "line1\nline2\n" || r["sha256"] != sha("line1\nline2\n") || num(r["bytes"]) != 12 {
				c.t.Fatalf("%v", r)
			}
		}},
		{id: f + "test_expected_prev_sha256_matches", run: func(c *pc) {
			r1 := c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "one\n"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "two\n", "mode": "overwrite", "expected_prev_sha256": r1["sha256"]})
		}},
		{id: f + "test_expected_prev_sha256_mismatch_rejects", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "one\n"})
			c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "two\n", "mode": "overwrite", "expected_prev_sha256": strings.Repeat("deadbeef", 8)}, "stale_precondition", "")
		}},
		{id: f + "test_path_traversal_rejected", run: func(c *pc) {
			c.fail("rw.safe_write", map[string]any{"path": "../escape.txt", "content": "x"}, "policy_violation", "")
		}},
		{id: f + "test_absolute_path_rejected", run: func(c *pc) {
			c.fail("rw.safe_write", map[string]any{"path": "/etc/passwd", "content": "x"}, "policy_violation", "")
		}},
		{id: f + "test_nested_directories_created", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a/b/c/deep.txt", "content": "ok\n"})
			if c.read("a/b/c/deep.txt") != "ok\n" {
				c.t.Fatal("deep")
			}
		}},
		{id: f + "test_no_temp_files_left_on_success", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x\n"})
			if l := c.tmpLeftovers(); len(l) != 0 {
				c.t.Fatal(l)
			}
		}},
		{id: f + "test_no_temp_files_left_on_rejected_create", setup: func(ws string) { os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old"), 0o644) }, run: func(c *pc) {
			c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "new"}, "stale_precondition", "")
			if l := c.tmpLeftovers(); len(l) != 0 {
				c.t.Fatal(l)
			}
		}},
		{id: f + "test_journal_is_jsonlines", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x\n"})
			c.ok("rw.safe_write", map[string]any{"path": "b.txt", "content": "y\n"})
			rows := c.journal()
			if len(rows) != 2 || !slices.Equal(sorted(rows[0]["path"].(string), rows[1]["path"].(string)), []string{"a.txt", "b.txt"}) {
				c.t.Fatalf("%v", rows)
			}
		}},
	}
}

func rwJournalCases() []rwCase {
	const f = "test_journal.py::"
	return []rwCase{
		{id: f + "test_tail_empty_when_no_writes", run: func(c *pc) {
			if es := entries(c.ok("rw.journal_tail", map[string]any{"n": 10})); len(es) != 0 {
				c.t.Fatal(es)
			}
		}},
		{id: f + "test_tail_respects_n", run: func(c *pc) {
			for i := range 5 {
				c.ok("rw.safe_write", map[string]any{"path": fmt.Sprintf("f%d.txt", i), "content": fmt.Sprintf("%d\n", i)})
			}
			es := entries(c.ok("rw.journal_tail", map[string]any{"n": 2}))
			if len(es) != 2 || es[0]["path"] != "f3.txt" || es[1]["path"] != "f4.txt" {
				c.t.Fatal(es)
			}
		}},
		{id: f + "test_tail_filter_by_path", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "1\n"})
			c.ok("rw.safe_write", map[string]any{"path": "b.txt", "content": "2\n"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "3\n", "mode": "overwrite"})
			es := entries(c.ok("rw.journal_tail", map[string]any{"n": 10, "filter_path": "a.txt"}))
			if len(es) != 2 || es[0]["path"] != "a.txt" || es[1]["path"] != "a.txt" {
				c.t.Fatal(es)
			}
		}},
		{id: f + "test_tail_filter_by_mode", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "1\n"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "2\n", "mode": "overwrite"})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "3\n", "mode": "append"})
			es := entries(c.ok("rw.journal_tail", map[string]any{"n": 10, "filter_mode": "overwrite"}))
			if len(es) != 1 || es[0]["mode"] != "overwrite" {
				c.t.Fatal(es)
			}
		}},
		{id: f + "test_journal_ids_are_unique", run: func(c *pc) {
			ids := map[any]bool{}
			for i := range 25 {
				ids[c.ok("rw.safe_write", map[string]any{"path": fmt.Sprintf("f%d.txt", i), "content": fmt.Sprintf("%d\n", i)})["journal_id"]] = true
			}
			if len(ids) != 25 {
				c.t.Fatal(len(ids))
			}
		}},
	}
}

func rwHandoffCases() []rwCase {
	const f = "test_handoff.py::"
	return []rwCase{
		{id: f + "test_write_and_read_round_trip", run: func(c *pc) {
			r1 := c.ok("rw.safe_write", map[string]any{"path": "report.tex", "content": "hello\n"})
			env := minimalEnvelope(map[string]any{"last_good_state": []any{map[string]any{"path": "report.tex", "sha256": r1["sha256"]}}})
			w := c.ok("rw.handoff_write", map[string]any{"envelope": env, "body": "# notes\n\nprose\n"})
			if w["handoff_path"] != "HANDOFF.md" || len(list(w["drift_warnings"])) != 0 || !c.exists("HANDOFF.md") {
				c.t.Fatalf("%v", w)
			}
			r := c.ok("rw.handoff_read", nil)
			e := obj(r["envelope"])
			if e["task_id"] != "demo-task" || e["status"] != "partial" || obj(list(e["last_good_state"])[0])["path"] != "report.tex" ||
				!strings.Contains(fmt.Sprint(r["body"]), "prose") || len(list(r["drift_warnings"])) != 0 {
				c.t.Fatalf("%v", r)
			}
		}},
		{id: f + "test_drift_warning_when_file_hash_changes", run: func(c *pc) {
			r1 := c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "one\n"})
			c.ok("rw.handoff_write", map[string]any{"envelope": minimalEnvelope(map[string]any{"last_good_state": []any{map[string]any{"path": "a.txt", "sha256": r1["sha256"]}}})})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "two\n", "mode": "overwrite"})
			d := list(c.ok("rw.handoff_read", nil)["drift_warnings"])
			if len(d) != 1 || obj(d[0])["reason"] != "hash_mismatch" || obj(d[0])["path"] != "a.txt" {
				c.t.Fatal(d)
			}
		}},
		{id: f + "test_drift_warning_when_file_missing", run: func(c *pc) {
			w := c.ok("rw.handoff_write", map[string]any{"envelope": minimalEnvelope(map[string]any{"last_good_state": []any{map[string]any{"path": "ghost.txt", "sha256": strings.Repeat("0", 64)}}})})
			d := list(w["drift_warnings"])
			if len(d) != 1 || len(obj(d[0])) != 2 || obj(d[0])["path"] != "ghost.txt" || obj(d[0])["reason"] != "missing" {
				c.t.Fatal(d)
			}
		}},
		{id: f + "test_missing_required_field_rejected", run: func(c *pc) {
			e := c.fail("rw.handoff_write", map[string]any{"envelope": minimalEnvelope(map[string]any{"task_id": nil})}, "policy_violation", "")
			if !slices.Contains(list(obj(e["context"])["missing_fields"]), any("task_id")) {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_invalid_status_rejected", run: func(c *pc) {
			c.fail("rw.handoff_write", map[string]any{"envelope": minimalEnvelope(map[string]any{"status": "wip"})}, "policy_violation", "")
		}},
		{id: f + "test_archive_copies_previous_envelope", run: func(c *pc) {
			c.ok("rw.handoff_write", map[string]any{"envelope": minimalEnvelope(map[string]any{"summary": "first"})})
			c.ok("rw.handoff_write", map[string]any{"envelope": minimalEnvelope(map[string]any{"summary": "second"}), "archive": true})
			arch, _ := filepath.Glob(c.path(c.state + "/handoffs/*.md"))
			if len(arch) != 1 {
				c.t.Fatal(arch)
			}
			if b, _ := os.ReadFile(arch[0]); !strings.Contains(string(b), "first") {
				c.t.Fatal(string(b))
			}
			if obj(c.ok("rw.handoff_read", nil)["envelope"])["summary"] != "second" {
				c.t.Fatal("current")
			}
		}},
		{id: f + "test_handoff_read_missing_file", run: func(c *pc) {
			c.fail("rw.handoff_read", nil, "stale_precondition", "")
		}},
		{id: f + "test_updated_at_auto_filled", run: func(c *pc) {
			env := minimalEnvelope(nil)
			c.ok("rw.handoff_write", map[string]any{"envelope": env})
			if _, ok := obj(c.ok("rw.handoff_read", nil)["envelope"])["updated_at"]; !ok {
				c.t.Fatal("no updated_at")
			}
			if _, ok := env["updated_at"]; ok {
				c.t.Fatal("caller's envelope modified")
			}
		}},
	}
}
