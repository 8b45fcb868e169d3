package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

func doctorCommand() *command {
	return &command{
		name:    "doctor",
		summary: "which agent CLIs are installed, their versions, and whether each works through the gateway",
		help: `For every agent CLI apiary has a profile for (Claude Code, Codex, Gemini CLI,
opencode, aider), reports whether it is installed (test/node_modules/.bin
above the current directory, or PATH), its version next to the version the
profile was checked against, and whether it passes a one-turn smoke test:
the CLI, run by its built-in profile, answers a scripted turn of apiary's
fake model server through an in-process gateway, which replaces the
attempt's virtual key with the upstream's and meters its tokens.

No key and no network are needed. The exit status is 0 when every
installed CLI passes, 1 when one fails; a CLI that is not installed is
reported, not failed.

EXAMPLES
  apiary doctor
  apiary doctor --json --timeout 2m`,
		setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print the results as JSON")
			timeout := fs.Duration("timeout", 90*time.Second, "how long one CLI's smoke test may take (`DURATION`)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return doctor(ctx, e, *asJSON, *timeout)
			}
		},
	}
}

// doctorResult is one CLI's line of `apiary doctor`.
type doctorResult struct {
	Kind      string `json:"kind"`
	CLI       string `json:"cli"`
	Package   string `json:"package"`
	Path      string `json:"path,omitempty"` // "" when not installed
	Version   string `json:"version,omitempty"`
	Checked   string `json:"checked"` // the version its profile was checked against
	Smoke     string `json:"smoke"`   // ok | failed | not installed | not run
	Reason    string `json:"reason,omitempty"`
	TokensIn  int64  `json:"tokens_in,omitempty"`
	TokensOut int64  `json:"tokens_out,omitempty"`
}

// doctorReply is what the fake model answers every smoke test with.
const doctorReply = "apiary doctor: ok"

func doctor(ctx context.Context, e *env, asJSON bool, timeout time.Duration) error {
	work, err := os.MkdirTemp("", "apiary-doctor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	scs, err := llmfake.ParseScripts("doctor", []byte("scripts:\n  - name: doctor\n    match: {any_request: true}\n    turns:\n      - text: \""+doctorReply+"\"\n    final: \""+doctorReply+"\"\n"))
	if err != nil {
		return err
	}
	fake, err := llmfake.ServeLoopback(llmfake.Config{Scripts: scs}, llmfake.Options{Seed: 1})
	if err != nil {
		return err
	}
	defer fake.Close()
	access, stop, err := startRunGateway(ctx, filepath.Join(work, "gateway.db"), fake.URL, "apiary-doctor-upstream-key", e.stderr)
	if err != nil {
		return err
	}
	defer stop()

	var results []doctorResult
	failed := false
	for _, f := range agent.Table() {
		if f.Kind == agent.KindCommand {
			continue
		}
		r := doctorResult{Kind: f.Kind, CLI: f.CLI, Package: f.Package, Checked: f.Checked, Smoke: "not installed"}
		if r.Path = findAgentCLI(f.Bin, ""); r.Path != "" {
			r.Version = cliVersion(ctx, r.Path)
			if !asJSON {
				fmt.Fprintf(e.stderr, "doctor: %s: smoke test...\n", f.CLI)
			}
			doctorSmoke(ctx, access, work, timeout, &r)
			failed = failed || r.Smoke == "failed"
		}
		results = append(results, r)
	}
	if asJSON {
		if err := writeJSON(e.stdout, results); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CLI\tKIND\tVERSION\tCHECKED\tSMOKE TEST\tTOKENS\tPATH")
		for _, r := range results {
			smoke := r.Smoke
			if r.Reason != "" {
				smoke += ": " + attempt.Clip(r.Reason, 70)
			}
			tokens := "-"
			if r.TokensIn+r.TokensOut > 0 {
				tokens = fmt.Sprintf("%d/%d", r.TokensIn, r.TokensOut)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.CLI, r.Kind, orDashStr(r.Version), r.Checked, smoke, tokens, orDashStr(r.Path))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if failed {
		return errSilent
	}
	return nil
}

// doctorSmoke runs one turn of r's CLI through the gateway and records
// how it went.
func doctorSmoke(ctx context.Context, access *gatewayAccess, work string, timeout time.Duration, r *doctorResult) {
	p, ok := agent.Builtin(r.Kind)
	if !ok {
		r.Smoke, r.Reason = "not run", "no built-in profile"
		return
	}
	p.Bin, p.Model = r.Path, demoModels[r.Kind]
	dir := filepath.Join(work, r.Kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Smoke, r.Reason = "failed", err.Error()
		return
	}
	acc, err := access.Grant(ctx, attempt.TaskRef{Run: "doctor", Task: r.Kind, Attempt: 1, Role: attempt.RoleWorker}, envelope.Budget{})
	if err != nil {
		r.Smoke, r.Reason = "failed", err.Error()
		return
	}
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		sctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	res, err := agent.Run(sctx, agent.Spec{Profile: p, Dir: dir, Prompt: "Reply with one line: apiary doctor.",
		TaskID: "doctor", RunID: "doctor", Home: filepath.Join(work, r.Kind+".home"), Log: filepath.Join(work, r.Kind+".log"),
		BaseURL: acc.BaseURL, APIKey: acc.APIKey})
	log := func() string {
		return strings.ReplaceAll(strings.TrimSpace(gate.ReadTail(filepath.Join(work, r.Kind+".log"), 4)), "\n", " | ")
	}
	switch {
	case errors.Is(err, agent.ErrUnsupported):
		r.Smoke, r.Reason = "not run", err.Error()
		return
	case err != nil:
		r.Smoke, r.Reason = "failed", err.Error()
		return
	case res.Cancelled:
		r.Smoke, r.Reason = "failed", fmt.Sprintf("no answer within %v: %s", timeout, log())
		return
	case res.Exit != 0:
		r.Smoke, r.Reason = "failed", fmt.Sprintf("exit %d: %s", res.Exit, log())
		return
	case res.Report == nil || !strings.Contains(res.Report.Text, doctorReply):
		r.Smoke, r.Reason = "failed", "its final message is not the scripted answer: "+log()
		return
	}
	u, err := access.Usage(ctx, acc.KeyID)
	if err != nil || u.InputTokens == 0 {
		r.Smoke, r.Reason = "failed", fmt.Sprintf("the gateway metered no tokens for its key (%v)", err)
		return
	}
	r.Smoke, r.TokensIn, r.TokensOut = "ok", u.InputTokens, u.OutputTokens
}

// cliVersion is the first line a CLI prints for --version ("" if none).
func cliVersion(ctx context.Context, bin string) string {
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(vctx, bin, "--version")
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return attempt.Clip(line, 40)
}

func orDashStr(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
