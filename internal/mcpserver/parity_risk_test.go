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

// kinds returns the detected pattern families and names of a risk report.
func kinds(r map[string]any) (fams, names []string) {
	for _, d := range list(r["detected_patterns"]) {
		fams = append(fams, fmt.Sprint(obj(d)["kind"]))
		names = append(names, fmt.Sprint(obj(d)["pattern"]))
	}
	return fams, names
}

func writePolicy(ws, rel, text string) {
	p := filepath.Join(ws, filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(text), 0o644)
}

// TestParityRisk covers checklist group F: rw.risk_score and classify.
func TestParityRisk(t *testing.T) {
	t.Parallel()
	score := func(c *pc, content string) map[string]any {
		return c.ok("rw.risk_score", map[string]any{"content": content})
	}
	runCases(t, []parityCase{
		{id: "F41-50", run: func(c *pc) {
			for _, tc := range []struct {
				content, fam, verdict string
				score                 float64
			}{
				{"# just a markdown heading\n\nhello world\n", "", "safe", 0},
				{"authorization: Bearer " + OAT + "\n", "api_key", "medium", 0.4375},
				{`access_token": "` + GHO + `"`, "github_pat", "low", 0.35},
				{"cookie: session=" + JWT + "\n", "jwt", "low", 0.25},
				{"-----BEGIN RSA PRIVATE KEY-----\nMIIEvQ...\n", "pem_block", "medium", 0.5},
				{"AWS_ACCESS_KEY_ID=" + AKID + "\n", "api_key", "low", 0.35},
				{"contact: " + EMAIL + "\n", "pii", "low", 0.15},
				{"ssn: " + SSN + "\n", "pii", "low", 0.15},
				{strings.Repeat("x", 2500) + "\n", "size", "medium", 0.4},
				{strings.Repeat("filler line\n", 15000), "size", "low", 0.25},
			} {
				r := score(c, tc.content)
				fams, names := kinds(r)
				if r["verdict"] != tc.verdict || num(r["score"]) != tc.score || (tc.fam != "" && !slices.Contains(fams, tc.fam)) || (tc.fam == "" && len(fams) > 0) {
					c.t.Errorf("%.30q: got %v %v %v", tc.content, r["verdict"], r["score"], fams)
				}
				if strings.HasPrefix(tc.content, "xxxx") && (!slices.Contains(names, "long_line") || !hasAction(r, "escape")) {
					c.t.Errorf("long line: %v %v", names, r["suggested_actions"])
				}
				if strings.HasPrefix(tc.content, "filler") && !slices.Contains(names, "big_100kb") {
					c.t.Errorf("15000 lines: %v", names)
				}
			}
		}},
		{id: "F51-54", run: func(c *pc) {
			for _, d := range list(score(c, "authorization: Bearer "+OAT+"\n")["detected_patterns"]) {
				if m, ok := obj(d)["match"].(string); ok && (len([]rune(m)) > 20 || strings.Contains(m, OAT)) {
					c.t.Errorf("match %q echoes too much", m)
				}
			}
			r := score(c, "line1\nline2\n"+GHO+"\nline4\n")
			for _, d := range list(r["detected_patterns"]) {
				if obj(d)["kind"] == "github_pat" && num(obj(d)["line"]) != 3 {
					c.t.Errorf("github_pat on line %v", obj(d)["line"])
				}
			}
			r = score(c, "a: "+OAT+"\nb: "+GHO+"\n")
			targets := list(obj(list(r["suggested_actions"])[0])["targets"])
			if !slices.Contains(targets, any("api_key")) || !slices.Contains(targets, any("github_pat")) {
				c.t.Errorf("redact targets %v", targets)
			}
			five := score(c, strings.Join([]string{GHO, GHP, GHO, GHP, GHO}, "\n")+"\n")
			if s := num(five["score"]); s <= 0.35 || s > 0.525 {
				c.t.Errorf("5 hits: %v", s)
			}
		}},
		{id: "F55", opts: srvOpts{compat: true}, setup: func(ws string) {
			writePolicy(ws, ".resilient_write/policy.yaml", "version: 1\ndisable_families: [pii]\n")
		}, run: func(c *pc) {
			if fams, _ := kinds(score(c, "contact: "+EMAIL+"\n")); slices.Contains(fams, "pii") {
				c.t.Fatal("pii not disabled")
			}
		}},
		{id: "F55-default", setup: func(ws string) {
			writePolicy(ws, ".apiary/durable/policy.yaml", "version: 1\ndisable_families: [pii]\n")
		}, run: func(c *pc) {
			if fams, _ := kinds(score(c, "contact: "+EMAIL+"\n")); slices.Contains(fams, "pii") {
				c.t.Fatal("pii not disabled")
			}
		}},
		{id: "F56", opts: srvOpts{compat: true}, setup: func(ws string) {
			writePolicy(ws, ".resilient_write/policy.yaml", "version: 1\nextend_patterns:\n  api_key:\n    - name: vendor_key\n      regex: 'VN-[0-9A-F]{24}'\n")
		}, run: func(c *pc) {
			if _, names := kinds(score(c, "token: VN-0123456789ABCDEF01234567")); !slices.Contains(names, "vendor_key") {
				c.t.Fatalf("names %v", names)
			}
		}},
		{id: "F57", opts: srvOpts{compat: true}, setup: func(ws string) {
			writePolicy(ws, ".resilient_write/policy.yaml", "version: 1\nthresholds:\n  high: 0.30\n  medium: 0.15\n  low: 0.05\n")
		}, run: func(c *pc) {
			if r := score(c, GHO); r["verdict"] != "high" {
				c.t.Fatalf("got %v", r["verdict"])
			}
		}},
		{id: "F58-60", inmem: true, run: func(c *pc) {
			c.ok("rw.safe_write", map[string]any{"path": "ok.md", "content": "# hi\n", "classify": true})
			e := c.fail("rw.safe_write", map[string]any{"path": "k.txt", "content": "authorization: Bearer " + OAT + "\nx-github-token: " + GHO + "\n", "classify": true}, "blocked", "content_filter")
			pats := list(e["detected_patterns"])
			if !slices.Contains(pats, any("api_key")) || !slices.Contains(pats, any("github_pat")) || e["suggested_action"] != "redact" || c.exists("k.txt") {
				c.t.Fatalf("got %v", e)
			}
			c.fail("rw.safe_write", map[string]any{"path": "p.txt", "content": "contact: " + EMAIL + "\n", "classify": true, "classify_reject_at": "low"}, "blocked", "")
		}},
		{id: "F61-63", run: func(c *pc) {
			if _, n := kinds(score(c, OAT)); !slices.Contains(n, "anthropic_oat") || slices.Contains(n, "openai_key") {
				c.t.Errorf("OAT: %v", n)
			}
			if _, n := kinds(score(c, "OPENAI_API_KEY="+OPENAI+"\n")); !slices.Contains(n, "openai_key") {
				c.t.Errorf("OPENAI: %v", n)
			}
			if _, n := kinds(score(c, "sk-proj-"+strings.Repeat("Z", 40))); !slices.Equal(n, []string{"openai_project_key"}) {
				c.t.Errorf("project key: %v", n)
			}
		}},
		{id: "F65", opts: srvOpts{env: map[string]string{"RW_POLICY_FILE": "policies/my.yaml"}}, setup: func(ws string) {
			writePolicy(ws, "policies/my.yaml", "version: 1\ndisable_families: [pii]\n")
		}, run: func(c *pc) {
			if fams, _ := kinds(score(c, "contact: "+EMAIL+"\n")); slices.Contains(fams, "pii") {
				c.t.Fatal("pii not disabled by workspace-relative RW_POLICY_FILE")
			}
		}},
		{id: "F66", opts: srvOpts{env: map[string]string{"RW_POLICY_FILE": "missing.yaml"}}, run: func(c *pc) {
			if fams, _ := kinds(score(c, "contact: "+EMAIL+"\n")); !slices.Contains(fams, "pii") {
				c.t.Fatal("missing policy file should mean defaults")
			}
		}},
		{id: "F67", opts: srvOpts{compat: true, env: map[string]string{"RW_POLICY_FILE": "empty.yaml"}}, setup: func(ws string) {
			writePolicy(ws, ".resilient_write/policy.yaml", "version: 1\ndisable_families: [pii]\n")
			writePolicy(ws, "empty.yaml", "version: 1\n")
		}, run: func(c *pc) {
			if fams, _ := kinds(score(c, "contact: "+EMAIL+"\n")); !slices.Contains(fams, "pii") {
				c.t.Fatal("RW_POLICY_FILE must win over the workspace policy")
			}
		}},
		{id: "F68", opts: srvOpts{compat: true}, setup: func(ws string) {
			writePolicy(ws, ".resilient_write/policy.yaml", "version: 1\nextend_patterns:\n  api_key:\n    - name: broken\n      regex: '('\n")
		}, run: func(c *pc) {
			for _, e := range []map[string]any{
				c.fail("rw.risk_score", map[string]any{"content": "x"}, "policy_violation", "encoding"),
				c.fail("rw.safe_write", map[string]any{"path": "a", "content": "x", "classify": true}, "policy_violation", "encoding"),
			} {
				if !strings.Contains(reason(e), "bad_regex") {
					c.t.Errorf("reason %q", reason(e))
				}
			}
		}},
	})
}

// TestParityRiskAbsolutePolicy is F64: RW_POLICY_FILE as an absolute path.
func TestParityRiskAbsolutePolicy(t *testing.T) {
	t.Parallel()
	pol := filepath.Join(t.TempDir(), "my.yaml")
	os.WriteFile(pol, []byte("version: 1\ndisable_families: [pii]\n"), 0o644)
	runCases(t, []parityCase{{id: "F64", opts: srvOpts{env: map[string]string{"RW_POLICY_FILE": pol}}, run: func(c *pc) {
		r := c.ok("rw.risk_score", map[string]any{"content": "contact: " + EMAIL + "\n"})
		if fams, _ := kinds(r); slices.Contains(fams, "pii") {
			c.t.Fatal("pii not disabled by absolute RW_POLICY_FILE")
		}
	}}})
}

func hasAction(r map[string]any, action string) bool {
	for _, a := range list(r["suggested_actions"]) {
		if obj(a)["action"] == action {
			return true
		}
	}
	return false
}
