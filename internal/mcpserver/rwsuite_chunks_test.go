//go:build unix

package mcpserver_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// cw is rw.chunk_write; total nil omits total_expected.
func cw(c *pc, session string, index int, content string, total any) map[string]any {
	c.t.Helper()
	a := map[string]any{"session": session, "index": index, "content": content}
	if total != nil {
		a["total_expected"] = total
	}
	return c.ok("rw.chunk_write", a)
}

func rwChunkCases() []rwCase {
	const f = "test_chunks.py::"
	manifest := func(c *pc, s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(c.read(c.state+"/chunks/"+s+"/manifest.json")), &m); err != nil {
			c.t.Fatal(err)
		}
		return m
	}
	return []rwCase{
		{id: f + "test_chunk_write_creates_part_file", run: func(c *pc) {
			r := cw(c, "s1", 1, "alpha\n", 3)
			if r["chunk_path"] != ".resilient_write/chunks/s1/part-001.txt" || r["sha256"] != sha("alpha\n") || c.read(".resilient_write/chunks/s1/part-001.txt") != "alpha\n" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_write_creates_manifest", run: func(c *pc) {
			cw(c, "s1", 1, "a", 2)
			m := manifest(c, "s1")
			_, c1 := m["created_at"]
			_, c2 := m["updated_at"]
			if m["session"] != "s1" || num(m["total_expected"]) != 2 || !c1 || !c2 {
				c.t.Fatal(m)
			}
		}},
		{id: f + "test_chunk_write_retry_overwrites", run: func(c *pc) {
			cw(c, "s1", 2, "v1\n", nil)
			if r := cw(c, "s1", 2, "v2\n", nil); r["sha256"] != sha("v2\n") || c.read(".resilient_write/chunks/s1/part-002.txt") != "v2\n" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_write_invalid_session_name", run: func(c *pc) {
			for _, bad := range []string{"", "has space", "with/slash", "..", strings.Repeat("a", 65)} {
				c.fail("rw.chunk_write", map[string]any{"session": bad, "index": 1, "content": "x"}, "policy_violation", "")
			}
		}},
		{id: f + "test_chunk_write_invalid_index", run: func(c *pc) {
			for _, bad := range []int{0, -1, 1000} {
				c.fail("rw.chunk_write", map[string]any{"session": "s", "index": bad, "content": "x"}, "policy_violation", "")
			}
		}},
		{id: f + "test_chunk_write_index_exceeds_total", run: func(c *pc) {
			e := c.fail("rw.chunk_write", map[string]any{"session": "s", "index": 5, "content": "x", "total_expected": 3}, "policy_violation", "")
			if reason(e) != "index_exceeds_total_expected" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_chunk_write_total_expected_sticky", run: func(c *pc) {
			cw(c, "s", 1, "a", 3)
			cw(c, "s", 2, "b", nil)
			if m := manifest(c, "s"); num(m["total_expected"]) != 3 {
				c.t.Fatal(m)
			}
		}},
		{id: f + "test_chunk_write_journal_entries", run: func(c *pc) {
			cw(c, "s", 1, "a", 2)
			cw(c, "s", 2, "b", 2)
			paths := map[any]bool{}
			for _, e := range entries(c.ok("rw.journal_tail", map[string]any{"n": 10})) {
				paths[e["path"]] = true
			}
			if !paths[".resilient_write/chunks/s/part-001.txt"] || !paths[".resilient_write/chunks/s/part-002.txt"] {
				c.t.Fatal(paths)
			}
		}},
		{id: f + "test_chunk_compose_concatenates_in_order", run: func(c *pc) {
			for i, p := range []string{"first", "second", "third"} {
				cw(c, "s", i+1, p, 3)
			}
			r := c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt"})
			if num(r["chunk_count"]) != 3 || c.read("out.txt") != "firstsecondthird" || r["sha256"] != sha("firstsecondthird") || len(list(r["chunk_hashes"])) != 3 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_compose_with_separator", run: func(c *pc) {
			cw(c, "s", 1, "a", 2)
			cw(c, "s", 2, "b", 2)
			r := c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt", "separator": "\n\n"})
			if c.read("out.txt") != "a\n\nb" || r["sha256"] != sha("a\n\nb") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_compose_overwrites_existing_output", setup: func(ws string) { os.WriteFile(filepath.Join(ws, "out.txt"), []byte("old\n"), 0o644) }, run: func(c *pc) {
			cw(c, "s", 1, "new\n", 1)
			c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt"})
			if c.read("out.txt") != "new\n" {
				c.t.Fatal(c.read("out.txt"))
			}
		}},
		{id: f + "test_chunk_compose_missing_chunk_rejected", run: func(c *pc) {
			cw(c, "s", 1, "a", 3)
			cw(c, "s", 3, "c", 3)
			e := c.fail("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt"}, "stale_precondition", "")
			if reason(e) != "non_contiguous_chunks" || fmt.Sprint(obj(e["context"])["missing"]) != "[2]" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_chunk_compose_total_mismatch_rejected", run: func(c *pc) {
			cw(c, "s", 1, "a", 3)
			cw(c, "s", 2, "b", 3)
			e := c.fail("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt"}, "stale_precondition", "")
			ctx := obj(e["context"])
			if reason(e) != "chunk_count_mismatch" || num(ctx["have"]) != 2 || num(ctx["total_expected"]) != 3 {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_chunk_compose_missing_session_rejected", run: func(c *pc) {
			if e := c.fail("rw.chunk_compose", map[string]any{"session": "ghost", "output_path": "out.txt"}, "stale_precondition", ""); reason(e) != "session_not_found" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_chunk_compose_cleanup_wipes_session", run: func(c *pc) {
			cw(c, "s", 1, "a", 1)
			c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt", "cleanup": true})
			if c.exists(".resilient_write/chunks/s") || c.read("out.txt") != "a" {
				c.t.Fatal("cleanup")
			}
		}},
		{id: f + "test_chunk_compose_without_cleanup_preserves_session", run: func(c *pc) {
			cw(c, "s", 1, "a", 1)
			c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt"})
			if c.read(".resilient_write/chunks/s/part-001.txt") != "a" {
				c.t.Fatal("parts gone")
			}
		}},
		{id: f + "test_chunk_reset_wipes_session", run: func(c *pc) {
			cw(c, "s", 1, "a", 2)
			cw(c, "s", 2, "b", 2)
			r := c.ok("rw.chunk_reset", map[string]any{"session": "s"})
			if r["existed"] != true || num(r["removed"]) < 2 || c.exists(".resilient_write/chunks/s") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_reset_missing_session", run: func(c *pc) {
			if r := c.ok("rw.chunk_reset", map[string]any{"session": "ghost"}); r["existed"] != false || num(r["removed"]) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_status_reports_present_indices", run: func(c *pc) {
			cw(c, "s", 1, "a", 3)
			cw(c, "s", 3, "c", 3)
			st := c.ok("rw.chunk_status", map[string]any{"session": "s"})
			if st["exists"] != true || num(st["total_expected"]) != 3 || fmt.Sprint(st["present_indices"]) != "[1 3]" {
				c.t.Fatal(st)
			}
		}},
		{id: f + "test_chunk_status_missing_session", run: func(c *pc) {
			if st := c.ok("rw.chunk_status", map[string]any{"session": "ghost"}); st["exists"] != false {
				c.t.Fatal(st)
			}
		}},
		{id: f + "test_chunk_append_starts_at_one", run: func(c *pc) {
			r := c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "first\n"})
			if num(r["index"]) != 1 || r["chunk_path"] != ".resilient_write/chunks/s/part-001.txt" || c.read(".resilient_write/chunks/s/part-001.txt") != "first\n" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_append_auto_increments", run: func(c *pc) {
			c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "A"})
			c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "B"})
			if r := c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "C"}); num(r["index"]) != 3 || r["sha256"] != sha("C") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_append_composes_correctly", run: func(c *pc) {
			for _, s := range []string{"\\section{Intro}\n", "\\section{Body}\n", "\\section{End}\n"} {
				c.ok("rw.chunk_append", map[string]any{"session": "doc", "content": s})
			}
			r := c.ok("rw.chunk_compose", map[string]any{"session": "doc", "output_path": "doc.tex"})
			if num(r["chunk_count"]) != 3 || c.read("doc.tex") != "\\section{Intro}\n\\section{Body}\n\\section{End}\n" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_append_with_total_expected", run: func(c *pc) {
			c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "a", "total_expected": 2})
			c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "b", "total_expected": 2})
			if r := c.ok("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt"}); num(r["chunk_count"]) != 2 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_append_mixed_with_chunk_write", run: func(c *pc) {
			cw(c, "s", 1, "manual", nil)
			if r := c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "auto"}); num(r["index"]) != 2 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_chunk_append_survives_gap_from_prior_write", run: func(c *pc) {
			cw(c, "s", 1, "a", nil)
			cw(c, "s", 3, "c", nil)
			if r := c.ok("rw.chunk_append", map[string]any{"session": "s", "content": "d"}); num(r["index"]) != 4 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_resumability_after_simulated_chunk_failure", run: func(c *pc) {
			cw(c, "report", 1, "A", 3)
			cw(c, "report", 2, "B", 3)
			c.fail("rw.chunk_compose", map[string]any{"session": "report", "output_path": "r.txt"}, "stale_precondition", "")
			if c.read(".resilient_write/chunks/report/part-001.txt") != "A" || c.read(".resilient_write/chunks/report/part-002.txt") != "B" {
				c.t.Fatal("parts lost")
			}
			cw(c, "report", 3, "C", 3)
			r := c.ok("rw.chunk_compose", map[string]any{"session": "report", "output_path": "r.txt", "cleanup": true})
			if c.read("r.txt") != "ABC" || num(r["chunk_count"]) != 3 || c.exists(".resilient_write/chunks/report") {
				c.t.Fatal(r)
			}
		}},
	}
}

func rwScratchCases() []rwCase {
	const f = "test_scratchpad.py::"
	b64 := base64.StdEncoding.EncodeToString
	indexRows := func(c *pc) []map[string]any {
		var rows []map[string]any
		for _, l := range strings.Split(c.read(".resilient_write/scratch/index.jsonl"), "\n") {
			if l != "" {
				var r map[string]any
				json.Unmarshal([]byte(l), &r)
				rows = append(rows, r)
			}
		}
		return rows
	}
	return []rwCase{
		{id: f + "test_put_writes_bin_and_index", run: func(c *pc) {
			r := c.ok("rw.scratch_put", map[string]any{"content": "raw secret material\n", "label": "test_alpha", "content_type": "text/plain"})
			want := sha("raw secret material\n")
			if r["sha256"] != want || r["scratch_path"] != ".resilient_write/scratch/"+want+".bin" || num(r["bytes"]) != 20 || r["deduped"] != false {
				c.t.Fatal(r)
			}
			if c.read(r["scratch_path"].(string)) != "raw secret material\n" {
				c.t.Fatal("bin")
			}
			rows := indexRows(c)
			if len(rows) != 1 || rows[0]["sha256"] != want || rows[0]["label"] != "test_alpha" || rows[0]["content_type"] != "text/plain" {
				c.t.Fatal(rows)
			}
		}},
		{id: f + "test_put_dedups_identical_content", run: func(c *pc) {
			a := c.ok("rw.scratch_put", map[string]any{"content": "same\n", "label": "first"})
			b := c.ok("rw.scratch_put", map[string]any{"content": "same\n", "label": "second"})
			if a["sha256"] != b["sha256"] || a["deduped"] != false || b["deduped"] != true || len(indexRows(c)) != 2 {
				c.t.Fatal(a, b)
			}
		}},
		{id: f + "test_put_base64_encoding", run: func(c *pc) {
			raw := "\x00\x01\x02\xff\xfe\xfdnot utf8"
			r := c.ok("rw.scratch_put", map[string]any{"content": b64([]byte(raw)), "encoding": "base64", "content_type": "application/octet-stream"})
			if r["sha256"] != sha(raw) || c.read(r["scratch_path"].(string)) != raw {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_put_bad_base64_rejected", run: func(c *pc) {
			e := c.fail("rw.scratch_put", map[string]any{"content": "not valid base64 !!", "encoding": "base64"}, "policy_violation", "")
			if !strings.Contains(reason(e), "bad_base64") {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_put_unknown_encoding_rejected", run: func(c *pc) {
			c.fail("rw.scratch_put", map[string]any{"content": "x", "encoding": "hex"}, "policy_violation", "")
		}},
		{id: f + "test_put_warns_when_gitignore_missing", run: func(c *pc) {
			w := list(c.ok("rw.scratch_put", map[string]any{"content": "x\n"})["warnings"])
			if len(w) != 1 || obj(w[0])["reason"] != "state_dir_not_gitignored" {
				c.t.Fatal(w)
			}
		}},
		{id: f + "test_put_no_warning_when_gitignored", setup: func(ws string) {
			os.WriteFile(filepath.Join(ws, ".gitignore"), []byte("# comment\n.resilient_write/\nother\n"), 0o644)
		}, run: func(c *pc) {
			if w := list(c.ok("rw.scratch_put", map[string]any{"content": "x\n"})["warnings"]); len(w) != 0 {
				c.t.Fatal(w)
			}
		}},
		{id: f + "test_put_no_warning_alt_gitignore_forms", setup: func(ws string) {
			os.WriteFile(filepath.Join(ws, ".gitignore"), []byte(".resilient_write\n"), 0o644)
		}, run: func(c *pc) {
			if w := list(c.ok("rw.scratch_put", map[string]any{"content": "x\n"})["warnings"]); len(w) != 0 {
				c.t.Fatal(w)
			}
		}},
		{id: f + "test_ref_by_sha256", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "m\n", "label": "alpha"})
			r := c.ok("rw.scratch_ref", map[string]any{"sha256": p["sha256"]})
			if obj(r["entry"])["label"] != "alpha" || r["bin_exists"] != true || num(r["alias_count"]) != 1 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_ref_by_label", run: func(c *pc) {
			c.ok("rw.scratch_put", map[string]any{"content": "m\n", "label": "alpha"})
			if r := c.ok("rw.scratch_ref", map[string]any{"label": "alpha"}); obj(r["entry"])["label"] != "alpha" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_ref_returns_latest_matching", run: func(c *pc) {
			c.ok("rw.scratch_put", map[string]any{"content": "a\n", "label": "shared"})
			c.ok("rw.scratch_put", map[string]any{"content": "b\n", "label": "shared"})
			r := c.ok("rw.scratch_ref", map[string]any{"label": "shared"})
			if obj(r["entry"])["sha256"] != sha("b\n") || num(r["alias_count"]) != 2 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_ref_missing", run: func(c *pc) {
			c.fail("rw.scratch_ref", map[string]any{"label": "ghost"}, "stale_precondition", "")
		}},
		{id: f + "test_ref_requires_sha_or_label", run: func(c *pc) {
			c.fail("rw.scratch_ref", nil, "policy_violation", "")
		}},
		{id: f + "test_ref_bad_sha256_shape", run: func(c *pc) {
			if e := c.fail("rw.scratch_ref", map[string]any{"sha256": "not-a-hash"}, "policy_violation", ""); reason(e) != "not_a_lowercase_sha256_hex" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_get_returns_utf8_content", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "hello\n", "label": "greet"})
			g := c.ok("rw.scratch_get", map[string]any{"sha256": p["sha256"]})
			if g["content"] != "hello\n" || g["label"] != "greet" || num(g["bytes"]) != 6 {
				c.t.Fatal(g)
			}
		}},
		{id: f + "test_get_base64_for_binary", run: func(c *pc) {
			raw := []byte("\x00\x01\x02\xff")
			p := c.ok("rw.scratch_put", map[string]any{"content": b64(raw), "encoding": "base64"})
			g := c.ok("rw.scratch_get", map[string]any{"sha256": p["sha256"], "encoding": "base64"})
			if got, _ := base64.StdEncoding.DecodeString(fmt.Sprint(g["content"])); string(got) != string(raw) {
				c.t.Fatal(g)
			}
		}},
		{id: f + "test_get_non_utf8_default_raises", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": b64([]byte("\xff\xfe\xfd")), "encoding": "base64"})
			if e := c.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "policy_violation", ""); reason(e) != "not_valid_utf8" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_get_missing_hash", run: func(c *pc) {
			c.fail("rw.scratch_get", map[string]any{"sha256": strings.Repeat("a", 64)}, "stale_precondition", "")
		}},
		{id: f + "test_get_gated_by_env", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "secret\n"})
			gated := c.restart(srvOpts{env: map[string]string{"RW_SCRATCH_DISABLE_GET": "1"}})
			if e := gated.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "policy_violation", "permission"); reason(e) != "scratch_get_disabled" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_get_drift_detection", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "original\n"})
			c.write(p["scratch_path"].(string), "tampered\n")
			if e := c.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "write_corruption", ""); reason(e) != "hash_drift_on_read" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_get_bad_sha_shape", run: func(c *pc) {
			c.fail("rw.scratch_get", map[string]any{"sha256": "short"}, "policy_violation", "")
		}},
	}
}
