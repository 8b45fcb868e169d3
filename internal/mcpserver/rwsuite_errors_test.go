//go:build unix

package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Fixtures of RW's risk tests (shaped like real tokens, synthetic).
var (
	synOAT   = "sk-ant-oat01-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	synGHO   = "gho_" + strings.Repeat("D", 36)
	synGHP   = "ghp_" + strings.Repeat("E", 36)
	synAKID  = "AKIA" + strings.Repeat("F", 16)
	synJWT   = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYXkifQ.signaturepart_XYZ"
	synSSN   = "123-45-6789"
	synEmail = "alice@example.com"
)

func rwErrorCases() []rwCase {
	const f = "test_errors.py::"
	schema := func(c *pc) map[string]any { _, m := c.envelopeSchemaOf("rw.safe_write"); return m }
	rejects := func(c *pc, env map[string]any) {
		c.t.Helper()
		rs, _ := c.envelopeSchemaOf("rw.safe_write")
		if rs.Validate(env) == nil {
			c.t.Fatalf("the published envelope schema accepts %v", env)
		}
	}
	base := func() map[string]any {
		return map[string]any{"ok": false, "schema_version": "1", "error": "blocked", "reason_hint": "content_filter",
			"detected_patterns": []any{}, "suggested_action": "redact", "retry_budget": 0, "context": map[string]any{}}
	}
	// retriable: RW's is_retriable for each reason hint, through an
	// envelope that carries that hint.
	retriable := func(hint string, want bool, produce func(c *pc) map[string]any) rwCase {
		id := f + "test_is_retriable[" + hint + "-" + map[bool]string{true: "True", false: "False"}[want] + "]"
		return rwCase{id: id, run: func(c *pc) {
			if produce == nil {
				// rwNotExpressible: no tool produces this hint.
				if !slices.Contains(enumOf(schema(c), "reason_hint"), hint) {
					c.t.Fatalf("schema does not list %s", hint)
				}
				return
			}
			e := produce(c)
			if e["reason_hint"] != hint || obj(e["context"])["retriable"] != want {
				c.t.Fatalf("want %s retriable=%v: %v", hint, want, e)
			}
		}}
	}
	bigFile := func(ws string) {
		os.WriteFile(filepath.Join(ws, "big.bin"), []byte(strings.Repeat("b", 1<<20+1)), 0o644)
	}
	return []rwCase{
		{id: f + "test_schema_file_declared_version_matches_code", run: func(c *pc) {
			if obj(obj(schema(c)["properties"])["schema_version"])["const"] != "1" {
				c.t.Fatal(schema(c))
			}
		}},
		{id: f + "test_schema_enumerates_all_error_kinds", run: func(c *pc) {
			if got := enumOf(schema(c), "error"); !slices.Equal(got, sorted("blocked", "stale_precondition", "write_corruption", "quota_exceeded", "policy_violation")) {
				c.t.Fatal(got)
			}
		}},
		{id: f + "test_schema_enumerates_all_reason_hints", run: func(c *pc) {
			if got := enumOf(schema(c), "reason_hint"); !slices.Equal(got, sorted("content_filter", "size_limit", "encoding", "permission", "network", "unknown")) {
				c.t.Fatal(got)
			}
		}},
		{id: f + "test_schema_enumerates_all_suggested_actions", run: func(c *pc) {
			if got := enumOf(schema(c), "suggested_action"); !slices.Equal(got, sorted("redact", "split", "escape", "ask_user", "retry_later", "abort")) {
				c.t.Fatal(got)
			}
		}},
		{id: f + "test_minimal_envelope_validates", run: func(c *pc) {
			// The least a tool says: a missing scratch entry.
			e := c.fail("rw.scratch_get", map[string]any{"sha256": strings.Repeat("a", 64)}, "stale_precondition", "")
			c.validEnvelope(e)
			if e["schema_version"] != "1" || len(list(e["detected_patterns"])) != 0 || num(e["retry_budget"]) != 0 {
				c.t.Fatal(e)
			}
			for k := range obj(e["context"]) {
				if !slices.Contains([]string{"tool", "retriable", "reason", "sha256"}, k) {
					c.t.Fatalf("context key %q beyond the failure's own", k)
				}
			}
		}},
		{id: f + "test_full_envelope_validates", run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "x.tex", "content": synOAT + "\n" + synGHO + "\n", "classify": true}, "blocked", "content_filter")
			c.validEnvelope(e)
			ctx := obj(e["context"])
			if e["suggested_action"] != "redact" || len(list(e["detected_patterns"])) < 2 || num(e["retry_budget"]) < 1 || ctx["path"] != "x.tex" || ctx["score"] == nil || ctx["verdict"] == nil {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_envelope_round_trips_through_json", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x"})
			e := c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "y", "mode": "overwrite", "expected_prev_sha256": "deadbeef"}, "stale_precondition", "")
			b, _ := json.Marshal(e)
			var back map[string]any
			json.Unmarshal(b, &back)
			c.validEnvelope(back)
			if back["error"] != "stale_precondition" {
				c.t.Fatal(back)
			}
		}},
		{id: f + "test_schema_rejects_unknown_error_kind", run: func(c *pc) {
			e := base()
			e["error"], e["reason_hint"], e["suggested_action"] = "not_a_real_kind", "unknown", "abort"
			rejects(c, e)
		}},
		{id: f + "test_schema_rejects_ok_true", run: func(c *pc) {
			e := base()
			e["ok"] = true
			rejects(c, e)
		}},
		{id: f + "test_schema_rejects_missing_required_field", run: func(c *pc) {
			e := base()
			delete(e, "reason_hint")
			rejects(c, e)
		}},
		{id: f + "test_factory_blocked", run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "x", "content": "api: " + synAKID + "\n" + synGHO + "\n", "classify": true, "classify_reject_at": "low"}, "blocked", "content_filter")
			c.validEnvelope(e)
			if e["suggested_action"] != "redact" || !slices.Contains(list(e["detected_patterns"]), any("api_key")) || num(e["retry_budget"]) != 3 {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_factory_stale_precondition", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "a.txt", "content": "x"})
			e := c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "y"}, "stale_precondition", "")
			c.validEnvelope(e)
			if e["suggested_action"] != "ask_user" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_factory_write_corruption", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "original\n"})
			c.write(p["scratch_path"].(string), "tampered\n")
			e := c.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "write_corruption", "")
			c.validEnvelope(e)
			if e["suggested_action"] != "abort" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_factory_policy_violation", run: func(c *pc) {
			e := c.fail("rw.scratch_put", map[string]any{"content": "!!", "encoding": "base64"}, "policy_violation", "encoding")
			c.validEnvelope(e)
		}},
		{id: f + "test_factory_quota_exceeded", setup: bigFile, run: func(c *pc) {
			e := c.fail("rw.read", map[string]any{"path": "big.bin", "encoding": "base64"}, "quota_exceeded", "size_limit")
			c.validEnvelope(e)
			if e["suggested_action"] != "split" {
				c.t.Fatal(e)
			}
		}},
		retriable("content_filter", false, func(c *pc) map[string]any {
			return c.fail("rw.safe_write", map[string]any{"path": "x", "content": synOAT + "\n" + synGHO + "\n", "classify": true}, "blocked", "")
		}),
		retriable("permission", false, func(c *pc) map[string]any {
			return c.fail("rw.safe_write", map[string]any{"path": "../x", "content": "x"}, "policy_violation", "")
		}),
		retriable("unknown", false, func(c *pc) map[string]any {
			return c.fail("rw.scratch_get", map[string]any{"sha256": strings.Repeat("a", 64)}, "stale_precondition", "")
		}),
		retriable("encoding", false, func(c *pc) map[string]any {
			return c.fail("rw.scratch_put", map[string]any{"content": "!!", "encoding": "base64"}, "policy_violation", "")
		}),
		retriable("network", true, nil),
		{id: f + "test_is_retriable[size_limit-True]", setup: bigFile, run: func(c *pc) {
			e := c.fail("rw.read", map[string]any{"path": "big.bin", "encoding": "base64"}, "quota_exceeded", "size_limit")
			if obj(e["context"])["retriable"] != true {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_l1_path_traversal_envelope", run: func(c *pc) {
			c.validEnvelope(c.fail("rw.safe_write", map[string]any{"path": "../escape.txt", "content": "x"}, "policy_violation", "permission"))
		}},
		{id: f + "test_l1_create_over_existing_envelope", setup: func(ws string) { os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old"), 0o644) }, run: func(c *pc) {
			c.validEnvelope(c.fail("rw.safe_write", map[string]any{"path": "a.txt", "content": "new"}, "stale_precondition", ""))
		}},
		{id: f + "test_l0_classify_block_envelope", run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "appendix.txt", "content": synOAT + "\n" + synGHO + "\n", "classify": true}, "blocked", "content_filter")
			c.validEnvelope(e)
			if !slices.Contains(list(e["detected_patterns"]), any("api_key")) {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_l2_non_contiguous_envelope", run: func(c *pc) {
			cw(c, "s", 1, "a", 3)
			cw(c, "s", 3, "c", 3)
			e := c.fail("rw.chunk_compose", map[string]any{"session": "s", "output_path": "out.txt"}, "stale_precondition", "")
			c.validEnvelope(e)
			if reason(e) != "non_contiguous_chunks" {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_l2_invalid_session_envelope", run: func(c *pc) {
			c.validEnvelope(c.fail("rw.chunk_write", map[string]any{"session": "bad name", "index": 1, "content": "x"}, "policy_violation", ""))
		}},
		{id: f + "test_l4_missing_scratch_envelope", run: func(c *pc) {
			c.validEnvelope(c.fail("rw.scratch_get", map[string]any{"sha256": strings.Repeat("a", 64)}, "stale_precondition", ""))
		}},
		{id: f + "test_l4_get_disabled_envelope", run: func(c *pc) {
			p := c.ok("rw.scratch_put", map[string]any{"content": "x\n"})
			g := c.restart(srvOpts{env: map[string]string{"RW_SCRATCH_DISABLE_GET": "1"}})
			c.validEnvelope(g.fail("rw.scratch_get", map[string]any{"sha256": p["sha256"]}, "policy_violation", "permission"))
		}},
		{id: f + "test_l4_bad_base64_envelope", run: func(c *pc) {
			c.validEnvelope(c.fail("rw.scratch_put", map[string]any{"content": "not valid base64 !!", "encoding": "base64"}, "policy_violation", "encoding"))
		}},
		{id: f + "test_l5_missing_required_field_envelope", run: func(c *pc) {
			e := c.fail("rw.handoff_write", map[string]any{"envelope": map[string]any{"task_id": "x"}}, "policy_violation", "encoding")
			c.validEnvelope(e)
			if _, ok := obj(e["context"])["missing_fields"]; !ok {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_l5_read_missing_file_envelope", run: func(c *pc) {
			c.validEnvelope(c.fail("rw.handoff_read", nil, "stale_precondition", ""))
		}},
		{id: f + "test_unknown_tool_envelope", run: func(c *pc) {
			e := c.fail("rw.does_not_exist", nil, "policy_violation", "")
			c.validEnvelope(e)
			if obj(e["context"])["unknown_tool"] != "rw.does_not_exist" {
				c.t.Fatal(e)
			}
		}},
	}
}

func rwRiskCases() []rwCase {
	const f = "test_risk_score.py::"
	score := func(c *pc, content string) map[string]any {
		c.t.Helper()
		return c.ok("rw.risk_score", map[string]any{"content": content})
	}
	policy := func(body string) func(ws string) {
		return func(ws string) {
			os.MkdirAll(filepath.Join(ws, ".resilient_write"), 0o755)
			os.WriteFile(filepath.Join(ws, ".resilient_write/policy.yaml"), []byte(body), 0o644)
		}
	}
	has := func(m map[string]any, key, val string) bool { return slices.Contains(patternField(m, key), val) }
	return []rwCase{
		{id: f + "test_safe_content_is_safe", run: func(c *pc) {
			r := score(c, "# just a markdown heading\n\nhello world\n")
			if r["verdict"] != "safe" || num(r["score"]) != 0 || len(list(r["detected_patterns"])) != 0 {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_anthropic_oat_flagged", run: func(c *pc) {
			r := score(c, "authorization: Bearer "+synOAT+"\n")
			if !has(r, "kind", "api_key") || !slices.Contains([]any{"medium", "high", "low"}, r["verdict"]) {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_github_pat_flagged", run: func(c *pc) {
			if r := score(c, `access_token": "`+synGHO+"\"\n"); !has(r, "kind", "github_pat") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_jwt_flagged", run: func(c *pc) {
			if r := score(c, "cookie: session="+synJWT+"\n"); !has(r, "kind", "jwt") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_pem_block_flagged", run: func(c *pc) {
			r := score(c, "-----BEGIN RSA PRIVATE KEY-----\nMIIEvQ...\n")
			if !has(r, "kind", "pem_block") || (r["verdict"] != "medium" && r["verdict"] != "high") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_aws_access_key_id_flagged", run: func(c *pc) {
			if r := score(c, "AWS_ACCESS_KEY_ID="+synAKID+"\n"); !has(r, "kind", "api_key") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_pii_email_flagged", run: func(c *pc) {
			if r := score(c, "contact: "+synEmail+"\n"); !has(r, "kind", "pii") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_pii_ssn_flagged", run: func(c *pc) {
			if r := score(c, "ssn: "+synSSN+"\n"); !has(r, "kind", "pii") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_long_line_heuristic", run: func(c *pc) {
			r := score(c, strings.Repeat("x", 2500)+"\n")
			escape := false
			for _, a := range list(r["suggested_actions"]) {
				escape = escape || obj(a)["action"] == "escape"
			}
			if !has(r, "pattern", "long_line") || !escape {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_total_bytes_heuristic", run: func(c *pc) {
			if r := score(c, strings.Repeat("filler line\n", 15000)); !has(r, "pattern", "big_100kb") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_match_snippets_are_truncated", run: func(c *pc) {
			for _, p := range list(score(c, synOAT+"\n")["detected_patterns"]) {
				if m, ok := obj(p)["match"].(string); ok && (len([]rune(m)) > 20 || strings.Contains(m, synOAT)) {
					c.t.Fatal(m)
				}
			}
		}},
		{id: f + "test_line_numbers_reported", run: func(c *pc) {
			r := score(c, "line1\nline2\n"+synGHO+"\nline4\n")
			for _, p := range list(r["detected_patterns"]) {
				if obj(p)["kind"] == "github_pat" {
					if num(obj(p)["line"]) != 3 {
						c.t.Fatal(p)
					}
					return
				}
			}
			c.t.Fatal(r)
		}},
		{id: f + "test_suggested_actions_include_redact_targets", run: func(c *pc) {
			r := score(c, "a: "+synOAT+"\nb: "+synGHO+"\n")
			for _, a := range list(r["suggested_actions"]) {
				if obj(a)["action"] == "redact" {
					t := list(obj(a)["targets"])
					if !slices.Contains(t, any("api_key")) || !slices.Contains(t, any("github_pat")) {
						c.t.Fatal(a)
					}
					return
				}
			}
			c.t.Fatal(r)
		}},
		{id: f + "test_multiple_hits_in_same_family_dampen", run: func(c *pc) {
			one := score(c, synGHO+"\n")
			many := score(c, strings.Join([]string{synGHO, synGHP, synGHO, synGHP, synGHO}, "\n")+"\n")
			if num(many["score"]) <= num(one["score"]) || num(many["score"]) > 0.525+1e-9 {
				c.t.Fatal(one["score"], many["score"])
			}
		}},
		{id: f + "test_disabled_family_via_workspace_policy", setup: policy("version: 1\ndisable_families: [pii]\n"), run: func(c *pc) {
			if r := score(c, "contact: "+synEmail+"\n"); has(r, "kind", "pii") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_extend_patterns_via_workspace_policy", setup: policy("version: 1\nextend_patterns:\n  api_key:\n    - name: vendor_key\n      regex: 'VN-[0-9A-F]{24}'\n"), run: func(c *pc) {
			if r := score(c, "token: VN-0123456789ABCDEF01234567\n"); !has(r, "pattern", "vendor_key") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_threshold_override", setup: policy("version: 1\nthresholds:\n  high: 0.30\n  medium: 0.15\n  low: 0.05\n"), run: func(c *pc) {
			if r := score(c, synGHO+"\n"); r["verdict"] != "high" {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_safe_write_classify_rejects_high_risk", run: func(c *pc) {
			e := c.fail("rw.safe_write", map[string]any{"path": "appendix.tex", "content": "authorization: Bearer " + synOAT + "\nx-github-token: " + synGHO + "\n", "classify": true}, "blocked", "content_filter")
			if !slices.Contains(list(e["detected_patterns"]), any("api_key")) || !slices.Contains(list(e["detected_patterns"]), any("github_pat")) || c.exists("appendix.tex") {
				c.t.Fatal(e)
			}
		}},
		{id: f + "test_safe_write_classify_allows_safe_content", run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "notes.md", "content": "# a harmless document\n\nprose only\n", "classify": true})
		}},
		{id: f + "test_safe_write_classify_threshold_low", run: func(c *pc) {
			c.fail("rw.safe_write", map[string]any{"path": "notes.md", "content": "contact: " + synEmail + "\n", "classify": true, "classify_reject_at": "low"}, "blocked", "")
		}},
		{id: f + "test_openai_key_regex_does_not_shadow_anthropic", run: func(c *pc) {
			r := score(c, synOAT+"\n")
			if !has(r, "pattern", "anthropic_oat") || has(r, "pattern", "openai_key") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_openai_key_regex_still_matches_real_openai", run: func(c *pc) {
			if r := score(c, "OPENAI_API_KEY=sk-"+strings.Repeat("C", 40)+"\n"); !has(r, "pattern", "openai_key") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_openai_project_key_no_double_hit", run: func(c *pc) {
			r := score(c, "sk-proj-"+strings.Repeat("Z", 40)+"\n")
			if !has(r, "pattern", "openai_project_key") || has(r, "pattern", "openai_key") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_policy_file_env_var_absolute", setup: func(ws string) {
			os.WriteFile(filepath.Join(filepath.Dir(ws), "custom_policy.yaml"), []byte("version: 1\ndisable_families: [pii]\n"), 0o644)
		}, run: func(c *pc) {
			p := c.restart(srvOpts{env: map[string]string{"RW_POLICY_FILE": filepath.Join(filepath.Dir(c.ws), "custom_policy.yaml")}})
			if r := p.ok("rw.risk_score", map[string]any{"content": "contact: " + synEmail + "\n"}); has(r, "kind", "pii") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_policy_file_env_var_relative", opts: srvOpts{env: map[string]string{"RW_POLICY_FILE": "policies/my.yaml"}}, setup: func(ws string) {
			os.MkdirAll(filepath.Join(ws, "policies"), 0o755)
			os.WriteFile(filepath.Join(ws, "policies/my.yaml"), []byte("version: 1\ndisable_families: [pii]\n"), 0o644)
		}, run: func(c *pc) {
			if r := score(c, "contact: "+synEmail+"\n"); has(r, "kind", "pii") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_policy_file_env_var_missing_file_falls_back_to_defaults", run: func(c *pc) {
			p := c.restart(srvOpts{env: map[string]string{"RW_POLICY_FILE": filepath.Join(c.ws, "ghost.yaml")}})
			if r := p.ok("rw.risk_score", map[string]any{"content": "contact: " + synEmail + "\n"}); !has(r, "kind", "pii") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_policy_file_env_var_overrides_workspace_yaml", setup: func(ws string) {
			policy("version: 1\ndisable_families: [pii]\n")(ws)
			os.WriteFile(filepath.Join(ws, "other.yaml"), []byte("version: 1\n"), 0o644)
		}, run: func(c *pc) {
			p := c.restart(srvOpts{env: map[string]string{"RW_POLICY_FILE": filepath.Join(c.ws, "other.yaml")}})
			if r := p.ok("rw.risk_score", map[string]any{"content": "contact: " + synEmail + "\n"}); !has(r, "kind", "pii") {
				c.t.Fatal(r)
			}
		}},
		{id: f + "test_policy_yaml_bad_regex_rejected", setup: policy("version: 1\nextend_patterns:\n  api_key:\n    - name: bad\n      regex: '('\n"), run: func(c *pc) {
			e := c.fail("rw.risk_score", map[string]any{"content": "x"}, "policy_violation", "")
			if !strings.Contains(reason(e), "bad_regex") {
				c.t.Fatal(e)
			}
		}},
	}
}
