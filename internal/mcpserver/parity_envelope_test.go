//go:build unix

package mcpserver_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestParityEnvelope covers checklist group I (item 115's size_limit case
// over HTTP is O11). Every call of the suite also
// goes through checkEnvelope (items 101–110: exact keys, enum values,
// schema_version "1", retry_budget an integer ≥ 0, context an object with
// tool and retriable, isError set).
func TestParityEnvelope(t *testing.T) {
	t.Parallel()
	runCases(t, []parityCase{
		{id: "I105-107", run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "", "content": "x"}, "policy_violation", "permission")
			if len(list(e["detected_patterns"])) != 0 || num(e["retry_budget"]) != 0 {
				c.t.Fatalf("minimal failure %v", e)
			}
			b := c.fail("rw.safe_write", map[string]any{"path": "k", "content": OAT + "\n" + GHO + "\n", "classify": true}, "blocked", "content_filter")
			ctx := obj(b["context"])
			if num(b["retry_budget"]) < 1 || ctx["path"] != "k" || ctx["score"] == nil || ctx["verdict"] != "high" {
				c.t.Fatalf("classify block %v", b)
			}
			text, _ := json.Marshal(b)
			var again map[string]any
			if json.Unmarshal(text, &again) != nil {
				c.t.Fatal("envelope does not round-trip")
			}
			checkEnvelope(c.t, "rw.safe_write", again)
		}},
		{id: "I111-115", run: func(c *pc) {
			b := c.fail("rw.safe_write", map[string]any{"path": "k", "content": OAT + "\n" + GHO + "\n", "classify": true}, "blocked", "content_filter")
			if b["suggested_action"] != "redact" || len(list(b["detected_patterns"])) == 0 {
				c.t.Errorf("blocked %v", b)
			}
			c.ok("rw.safe_write", map[string]any{"path": "a", "content": "x"})
			if s := c.fail("rw.safe_write", map[string]any{"path": "a", "content": "y"}, "stale_precondition", ""); s["suggested_action"] != "ask_user" {
				c.t.Errorf("stale %v", s)
			}
			p := c.ok("rw.scratch_put", map[string]any{"content": "original\n"})
			os.WriteFile(c.path(c.state+"/scratch/"+p["sha256"].(string)+".bin"), []byte("tampered\n"), 0o644)
			if wc := c.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "write_corruption", ""); wc["suggested_action"] != "abort" {
				c.t.Errorf("corruption %v", wc)
			}
			c.fail("rw.scratch_put", map[string]any{"content": "not valid base64 !!", "encoding": "base64"}, "policy_violation", "encoding")
		}},
		{id: "I116-121", run: func(c *pc) {
			for _, tc := range []struct {
				tool string
				args map[string]any
				hint string
			}{
				{"rw.safe_write", map[string]any{"path": "k", "content": OAT + "\n" + GHO, "classify": true}, "content_filter"},
				{"rw.safe_write", map[string]any{"path": "../x", "content": "x"}, "permission"},
				{"rw.scratch_put", map[string]any{"content": "!!", "encoding": "base64"}, "encoding"},
				{"rw.safe_write", map[string]any{"path": "a", "content": "x", "mode": "bogus"}, "unknown"},
			} {
				e := c.call(tc.tool, tc.args)
				if e["reason_hint"] != tc.hint || obj(e["context"])["retriable"] != false {
					c.t.Errorf("%s: %v", tc.hint, e)
				}
			}
		}},
		{id: "I122-132", opts: srvOpts{env: map[string]string{"RW_SCRATCH_DISABLE_GET": "1"}}, run: func(c *pc) {
			c.fail("rw.safe_write", map[string]any{"path": "../x", "content": "x"}, "policy_violation", "permission")
			c.ok("rw.safe_write", map[string]any{"path": "a", "content": "x"})
			c.fail("rw.safe_write", map[string]any{"path": "a", "content": "y"}, "stale_precondition", "")
			b := c.fail("rw.safe_write", map[string]any{"path": "k", "content": OAT + "\n" + GHO + "\n", "classify": true}, "blocked", "")
			if obj(b["context"])["score"] != 0.7 || !slices.Contains(list(b["detected_patterns"]), any("api_key")) {
				c.t.Errorf("0.70 block %v", b)
			}
			c.ok("rw.chunk_write", map[string]any{"session": "g", "index": 1, "content": "a", "total_expected": 3})
			c.ok("rw.chunk_write", map[string]any{"session": "g", "index": 3, "content": "c"})
			if e := c.call("rw.chunk_compose", map[string]any{"session": "g", "output_path": "o"}); reason(e) != "non_contiguous_chunks" {
				c.t.Errorf("gap %v", e)
			}
			c.fail("rw.chunk_write", map[string]any{"session": "bad name", "index": 1, "content": "x"}, "policy_violation", "")
			e := c.fail("rw.scratch_get", map[string]any{"sha256": strings.Repeat("a", 64)}, "policy_violation", "permission")
			if reason(e) != "scratch_get_disabled" {
				c.t.Errorf("disabled get %v", e)
			}
			c.fail("rw.scratch_put", map[string]any{"content": "not valid base64 !!", "encoding": "base64"}, "policy_violation", "encoding")
			h := c.fail("rw.handoff_write", map[string]any{"envelope": map[string]any{"task_id": "x"}}, "policy_violation", "encoding")
			if len(list(obj(h["context"])["missing_fields"])) == 0 {
				c.t.Errorf("missing_fields %v", h)
			}
			c.fail("rw.handoff_read", nil, "stale_precondition", "")
			if u := c.fail("rw.does_not_exist", nil, "policy_violation", ""); obj(u["context"])["unknown_tool"] != "rw.does_not_exist" {
				c.t.Errorf("unknown %v", u)
			}
		}},
		{id: "I128", run: func(c *pc) {
			c.fail("rw.scratch_get", map[string]any{"sha256": strings.Repeat("a", 64)}, "stale_precondition", "")
		}},
		{id: "I-inputs", inmem: true, run: func(c *pc) {
			// Input validation happens in our handlers: every bad input is an
			// envelope, never SDK text or a JSON-RPC error.
			for _, args := range []map[string]any{
				{"content": "x"},
				{"path": 7, "content": "x"},
				{"path": "a", "content": "x", "bogus": true},
				{"path": "a", "content": "x", "classify": "yes"},
			} {
				c.fail("rw.safe_write", args, "policy_violation", "encoding")
			}
			c.fail("rw.chunk_write", map[string]any{"session": "s", "index": "one", "content": "x"}, "policy_violation", "encoding")
			c.fail("rw.checkpoint", map[string]any{"name": "n"}, "policy_violation", "encoding")
		}},
	})
}

// TestParityScratch covers checklist group J.
func TestParityScratch(t *testing.T) {
	t.Parallel()
	put := func(c *pc, args map[string]any) map[string]any { return c.ok("rw.scratch_put", args) }
	runCases(t, []parityCase{
		{id: "J133-134", opts: srvOpts{compat: true}, run: func(c *pc) {
			r := put(c, map[string]any{"content": "raw secret material\n", "label": "test_alpha", "content_type": "text/plain"})
			want := ".resilient_write/scratch/" + sha("raw secret material\n") + ".bin"
			if r["scratch_path"] != want || num(r["bytes"]) != 20 || r["deduped"] != false || c.read(want) != "raw secret material\n" {
				c.t.Fatalf("got %v", r)
			}
			idx := strings.Split(strings.TrimSpace(c.read(".resilient_write/scratch/index.jsonl")), "\n")
			var row map[string]any
			mustJSON(c, idx[0], &row)
			if len(idx) != 1 || row["label"] != "test_alpha" || row["content_type"] != "text/plain" || row["sha256"] != sha("raw secret material\n") {
				c.t.Fatalf("index %v", idx)
			}
			a := put(c, map[string]any{"content": "same\n", "label": "first"})
			b := put(c, map[string]any{"content": "same\n", "label": "second"})
			if a["sha256"] != b["sha256"] || a["deduped"] != false || b["deduped"] != true || b["journal_id"] != nil {
				c.t.Fatalf("dedup %v %v", a, b)
			}
			if n := len(strings.Split(strings.TrimSpace(c.read(".resilient_write/scratch/index.jsonl")), "\n")); n != 3 {
				c.t.Fatalf("%d index rows", n)
			}
		}},
		{id: "J135-137", run: func(c *pc) {
			raw := "\x00\x01\x02\xff\xfe\xfdnot utf8"
			r := put(c, map[string]any{"content": base64.StdEncoding.EncodeToString([]byte(raw)), "encoding": "base64"})
			if r["sha256"] != sha(raw) || c.read(c.state+"/scratch/"+sha(raw)+".bin") != raw {
				c.t.Fatalf("got %v", r)
			}
			if e := c.fail("rw.scratch_put", map[string]any{"content": "not valid base64 !!", "encoding": "base64"}, "policy_violation", ""); !strings.Contains(reason(e), "bad_base64") {
				c.t.Fatalf("got %v", e)
			}
			c.fail("rw.scratch_put", map[string]any{"content": "x", "encoding": "hex"}, "policy_violation", "")
		}},
		{id: "J138-140", opts: srvOpts{compat: true}, run: func(c *pc) {
			if w := list(put(c, map[string]any{"content": "a"})["warnings"]); len(w) != 1 || obj(w[0])["reason"] != "state_dir_not_gitignored" {
				c.t.Fatalf("warnings %v", w)
			}
			for _, gi := range []string{"# comment\n.resilient_write/\nother\n", ".resilient_write\n"} {
				c.write(".gitignore", gi)
				if w := list(put(c, map[string]any{"content": "b"})["warnings"]); len(w) != 0 {
					c.t.Fatalf("%q: warnings %v", gi, w)
				}
			}
		}},
		{id: "J141-146", run: func(c *pc) {
			p := put(c, map[string]any{"content": "x", "label": "alpha"})
			r := c.ok("rw.scratch_ref", map[string]any{"sha256": p["sha256"]})
			if obj(r["entry"])["label"] != "alpha" || r["bin_exists"] != true || num(r["alias_count"]) != 1 {
				c.t.Fatalf("ref %v", r)
			}
			if r := c.ok("rw.scratch_ref", map[string]any{"label": "alpha"}); obj(r["entry"])["label"] != "alpha" {
				c.t.Fatalf("ref label %v", r)
			}
			put(c, map[string]any{"content": "a\n", "label": "shared"})
			put(c, map[string]any{"content": "b\n", "label": "shared"})
			if r := c.ok("rw.scratch_ref", map[string]any{"label": "shared"}); obj(r["entry"])["sha256"] != sha("b\n") || num(r["alias_count"]) != 2 {
				c.t.Fatalf("shared %v", r)
			}
			c.fail("rw.scratch_ref", map[string]any{"label": "ghost"}, "stale_precondition", "")
			c.fail("rw.scratch_ref", nil, "policy_violation", "")
			if e := c.fail("rw.scratch_ref", map[string]any{"sha256": "not-a-hash"}, "policy_violation", ""); reason(e) != "not_a_lowercase_sha256_hex" {
				c.t.Fatalf("got %v", e)
			}
		}},
		{id: "J147-153", inmem: true, run: func(c *pc) {
			p := put(c, map[string]any{"content": "hello\n", "label": "greet"})
			g := c.ok("rw.scratch_get", map[string]any{"sha256": p["sha256"]})
			if g["content"] != "hello\n" || g["label"] != "greet" || num(g["bytes"]) != 6 {
				c.t.Fatalf("get %v", g)
			}
			raw := "\x00\x01\x02\xff"
			b64 := base64.StdEncoding.EncodeToString([]byte(raw))
			p = put(c, map[string]any{"content": b64, "encoding": "base64"})
			if g := c.ok("rw.scratch_get", map[string]any{"sha256": p["sha256"], "encoding": "base64"}); g["content"] != b64 {
				c.t.Fatalf("base64 get %v", g)
			}
			e := c.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "policy_violation", "encoding")
			if reason(e) != "not_valid_utf8" || e["suggested_action"] != "retry_later" {
				c.t.Fatalf("utf8 %v", e)
			}
			c.fail("rw.scratch_get", map[string]any{"sha256": strings.Repeat("a", 64)}, "stale_precondition", "")
			c.fail("rw.scratch_get", map[string]any{"sha256": "short"}, "policy_violation", "")
			p = put(c, map[string]any{"content": "original\n"})
			os.WriteFile(c.path(c.state+"/scratch/"+p["sha256"].(string)+".bin"), []byte("tampered\n"), 0o644)
			if e := c.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "write_corruption", ""); reason(e) != "hash_drift_on_read" {
				c.t.Fatalf("drift %v", e)
			}
		}},
		{id: "J151", opts: srvOpts{env: map[string]string{"RW_SCRATCH_DISABLE_GET": "1"}}, run: func(c *pc) {
			if e := c.fail("rw.scratch_get", map[string]any{"sha256": "not even a hash"}, "policy_violation", "permission"); reason(e) != "scratch_get_disabled" {
				c.t.Fatalf("got %v", e)
			}
		}},
	})
}

// TestParityHandoff covers checklist group K.
func TestParityHandoff(t *testing.T) {
	t.Parallel()
	env := func(task, status string, lgs []any) map[string]any {
		return map[string]any{"task_id": task, "status": status, "agent": "claude", "summary": "s", "next_steps": []any{"n"}, "last_good_state": lgs}
	}
	runCases(t, []parityCase{
		{id: "K154", run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "report.tex", "content": "\\section{x}\n"})
			w := c.ok("rw.handoff_write", map[string]any{"envelope": env("t1", "partial", []any{map[string]any{"path": "report.tex", "sha256": r["sha256"]}}), "body": "# notes\n\nprose\n"})
			if w["handoff_path"] != "HANDOFF.md" || len(list(w["drift_warnings"])) != 0 {
				c.t.Fatalf("write %v", w)
			}
			rd := c.ok("rw.handoff_read", nil)
			e := obj(rd["envelope"])
			if e["task_id"] != "t1" || e["status"] != "partial" || obj(list(e["last_good_state"])[0])["path"] != "report.tex" || !strings.Contains(rd["body"].(string), "prose") || len(list(rd["drift_warnings"])) != 0 {
				c.t.Fatalf("read %v", rd)
			}
		}},
		{id: "K155-156", run: func(c *pc) {
			r := c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "1"})
			c.ok("rw.handoff_write", map[string]any{"envelope": env("t", "partial", []any{map[string]any{"path": "a.txt", "sha256": r["sha256"]}})})
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "2", "mode": "overwrite"})
			d := list(c.ok("rw.handoff_read", nil)["drift_warnings"])
			if len(d) != 1 || obj(d[0])["reason"] != "hash_mismatch" || obj(d[0])["path"] != "a.txt" {
				c.t.Fatalf("drift %v", d)
			}
			w := c.ok("rw.handoff_write", map[string]any{"envelope": env("t", "partial", []any{map[string]any{"path": "ghost.txt", "sha256": strings.Repeat("0", 64)}})})
			got, _ := json.Marshal(w["drift_warnings"])
			if string(got) != `[{"path":"ghost.txt","reason":"missing"}]` {
				c.t.Fatalf("missing drift %s", got)
			}
		}},
		{id: "K157-158-160", run: func(c *pc) {
			e := map[string]any{"status": "complete", "agent": "a", "summary": "s", "next_steps": []any{}, "last_good_state": []any{}}
			f := c.fail("rw.handoff_write", map[string]any{"envelope": e}, "policy_violation", "")
			if !slices.Contains(list(obj(f["context"])["missing_fields"]), any("task_id")) {
				c.t.Fatalf("got %v", f)
			}
			c.fail("rw.handoff_write", map[string]any{"envelope": env("t", "wip", []any{})}, "policy_violation", "")
			c.fail("rw.handoff_read", nil, "stale_precondition", "")
		}},
		{id: "K161", run: func(c *pc) {
			e := env("t", "complete", []any{})
			c.ok("rw.handoff_write", map[string]any{"envelope": e})
			if _, ok := e["updated_at"]; ok {
				c.t.Fatal("caller's envelope modified")
			}
			if obj(c.ok("rw.handoff_read", nil)["envelope"])["updated_at"] == nil {
				c.t.Fatal("updated_at not filled in")
			}
		}},
		{id: "K159", opts: srvOpts{compat: true}, run: func(c *pc) {
			first := env("t", "partial", []any{})
			first["summary"] = "first"
			c.ok("rw.handoff_write", map[string]any{"envelope": first})
			second := env("t", "partial", []any{})
			second["summary"] = "second"
			c.ok("rw.handoff_write", map[string]any{"envelope": second, "archive": true})
			ents, _ := os.ReadDir(c.path(".resilient_write/handoffs"))
			if len(ents) != 1 {
				c.t.Fatalf("%d archives", len(ents))
			}
			old, _ := os.ReadFile(filepath.Join(c.path(".resilient_write/handoffs"), ents[0].Name()))
			if !strings.Contains(string(old), "first") || obj(c.ok("rw.handoff_read", nil)["envelope"])["summary"] != "second" {
				c.t.Fatalf("archive %q", old)
			}
		}},
		{id: "K-order", inmem: true, run: func(c *pc) {
			// The front matter keeps the caller's key order.
			res, err := c.cs.CallTool(c.ctx, &mcp.CallToolParams{Name: "rw.handoff_write", Arguments: json.RawMessage(
				`{"envelope":{"task_id":"t","status":"complete","agent":"a","summary":"s","next_steps":[],"last_good_state":[],"zeta":1,"alpha":2}}`)})
			if err != nil {
				c.t.Fatal(err)
			}
			checkResult(c.t, "rw.handoff_write", res)
			text := c.read("HANDOFF.md")
			order := []string{"task_id:", "status:", "agent:", "summary:", "next_steps:", "last_good_state:", "zeta:", "alpha:", "updated_at:"}
			last := -1
			for _, k := range order {
				i := strings.Index(text, "\n"+k)
				if i <= last {
					c.t.Fatalf("front matter order broken at %s:\n%s", k, text)
				}
				last = i
			}
		}},
	})
}
