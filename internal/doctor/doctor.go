// Package doctor is what `apiary doctor` checks: which agent CLIs are
// installed, their versions beside the versions their profiles were checked
// against, and whether each answers a scripted turn of llmfake through an
// in-process gateway that substitutes the upstream's key and meters the
// tokens. No key and no network are needed.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/demo"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// Result is one CLI's line of `apiary doctor` (its JSON form too).
type Result struct {
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

// Failed says whether a smoke test failed (a CLI that is not installed
// did not fail).
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Smoke == "failed" {
			return true
		}
	}
	return false
}

// Options configure Run.
type Options struct {
	// Timeout bounds one CLI's smoke test (0: no bound).
	Timeout time.Duration
	// Progress, if set, gets a line as each smoke test starts.
	Progress io.Writer
	// Log gets the in-process gateway's messages.
	Log io.Writer
}

// reply is what the fake model answers every smoke test with.
const reply = "apiary doctor: ok"

// Run checks every agent CLI apiary has a profile for (command agents
// aside), in the order of agent.Table.
func Run(ctx context.Context, opt Options) ([]Result, error) {
	work, err := os.MkdirTemp("", "apiary-doctor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	scs, err := llmfake.ParseScripts("doctor", []byte("scripts:\n  - name: doctor\n    match: {any_request: true}\n    turns:\n      - text: \""+reply+"\"\n    final: \""+reply+"\"\n"))
	if err != nil {
		return nil, err
	}
	fake, err := llmfake.ServeLoopback(llmfake.Config{Scripts: scs}, llmfake.Options{Seed: 1})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	log := opt.Log
	if log == nil {
		log = io.Discard
	}
	gw, stop, err := access.StartGateway(ctx, filepath.Join(work, "gateway.db"), fake.URL, "apiary-doctor-upstream-key", log)
	if err != nil {
		return nil, err
	}
	defer stop()

	var results []Result
	for _, f := range agent.Table() {
		if f.Kind == agent.KindCommand {
			continue
		}
		r := Result{Kind: f.Kind, CLI: f.CLI, Package: f.Package, Checked: f.Checked, Smoke: "not installed"}
		if r.Path = agent.FindCLI(f.Bin); r.Path != "" {
			r.Version = version(ctx, r.Path)
			if opt.Progress != nil {
				fmt.Fprintf(opt.Progress, "doctor: %s: smoke test...\n", f.CLI)
			}
			Smoke(ctx, gw, work, opt.Timeout, &r)
		}
		results = append(results, r)
	}
	return results, nil
}

// WriteTable prints results as a table, one CLI per line.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.CLI, r.Kind, orDash(r.Version), r.Checked, smoke, tokens, orDash(r.Path))
	}
	return tw.Flush()
}

// Smoke runs one turn of r's CLI (r.Kind's built-in profile, the
// executable r.Path) through gw in a directory under work and records how
// it went in r.
func Smoke(ctx context.Context, gw *access.Gateway, work string, timeout time.Duration, r *Result) {
	p, ok := agent.Builtin(r.Kind)
	if !ok {
		r.Smoke, r.Reason = "not run", "no built-in profile"
		return
	}
	p.Bin, p.Model = r.Path, demo.Model(r.Kind)
	dir := filepath.Join(work, r.Kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Smoke, r.Reason = "failed", err.Error()
		return
	}
	acc, err := gw.Grant(ctx, attempt.TaskRef{Run: "doctor", Task: r.Kind, Attempt: 1, Role: attempt.RoleWorker}, envelope.Budget{})
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
	case res.Report == nil || !strings.Contains(res.Report.Text, reply):
		r.Smoke, r.Reason = "failed", "its final message is not the scripted answer: "+log()
		return
	}
	u, err := gw.Usage(ctx, acc.KeyID)
	if err != nil || u.InputTokens == 0 {
		r.Smoke, r.Reason = "failed", fmt.Sprintf("the gateway metered no tokens for its key (%v)", err)
		return
	}
	r.Smoke, r.TokensIn, r.TokensOut = "ok", u.InputTokens, u.OutputTokens
}

// version is the first line a CLI prints for --version ("" if none).
func version(ctx context.Context, bin string) string {
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
