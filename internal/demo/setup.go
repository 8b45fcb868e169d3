package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/runs"
)

// OptionError is a demo option that is not one of its choices; the message
// names the flag.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

// Workers resolves the workers' kind (claude, codex, gemini, opencode,
// command, or auto: claude when its CLI is found, else command) and the
// CLI's executable: bin when given, else found with agent.FindCLI. A CLI
// asked for by name that is nowhere is an error that says how to get it.
func Workers(kind, bin string) (string, string, error) {
	find := func(name string) string {
		if bin != "" {
			return bin
		}
		return agent.FindCLI(name)
	}
	switch kind {
	case "command":
	case "auto":
		if kind, bin = "claude", find("claude"); bin == "" {
			kind = "command"
		}
	case agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode:
		facts, _ := agent.FactsOf(kind)
		if bin = find(facts.Bin); bin == "" {
			return "", "", fmt.Errorf("demo: the %s CLI (%s) was not found: install %s, or pass --bin PATH or --agent command", facts.CLI, facts.Bin, facts.Package)
		}
	default:
		return "", "", &OptionError{fmt.Sprintf("--agent must be claude, codex, gemini, opencode, command or auto, got %q", kind)}
	}
	return kind, bin, nil
}

// Result is the demo's outcome, and its JSON output.
type Result struct {
	Dir    string       `json:"dir"`
	Repo   string       `json:"repo"`
	Agents string       `json:"agents"` // claude | codex | gemini | opencode | command
	Checks string       `json:"checks"` // go test | grep
	Kept   bool         `json:"kept"`
	Report *runs.Report `json:"report"`
}

// Options say how Setup prepares a demo.
type Options struct {
	Kind   string // the workers, as Workers resolved them
	Dir    string // where to build it (created, kept); "" for a temporary directory
	Keep   bool   // keep a temporary directory
	Checks string // go (go test), grep, or auto (go when on PATH)
	Slow   bool   // every agent takes Delay at least
}

// Demo is a demo set up to run: its repository, its plan and, for agent
// CLIs, the scripted model they reach. Close removes what it made unless
// it is kept.
type Demo struct {
	Result
	Plan     []byte // the plan, also written to Dir/plan.yaml
	ModelURL string // llmfake's base URL, "" for command workers (see Key)
	close    []func()
}

// Close stops the model server and removes the directory unless kept.
func (d *Demo) Close() {
	for i := len(d.close) - 1; i >= 0; i-- {
		d.close[i]()
	}
}

// Setup builds the demo's repository and plan under opt.Dir (or a
// temporary directory) and, for agent CLIs, starts their scripted model on
// loopback.
func Setup(ctx context.Context, opt Options) (d *Demo, err error) {
	d = &Demo{}
	defer func() {
		if err != nil {
			d.Close()
			d = nil
		}
	}()
	dir, keep := opt.Dir, opt.Keep || opt.Dir != ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "apiary-demo-"); err != nil {
			return d, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return d, err
	}
	if !keep {
		d.close = append(d.close, func() { os.RemoveAll(dir) })
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return d, err
	}
	d.Result = Result{Dir: dir, Repo: filepath.Join(dir, "repo"), Agents: opt.Kind, Checks: "grep", Kept: keep}
	_, goErr := exec.LookPath("go")
	switch opt.Checks {
	case "auto":
	case "go":
		if goErr != nil {
			return d, fmt.Errorf("demo: --checks go: %w", goErr)
		}
	case "grep":
		goErr = errors.New("grep checks asked for")
	default:
		return d, &OptionError{fmt.Sprintf("--checks must be go, grep or auto, got %q", opt.Checks)}
	}
	if goErr == nil {
		d.Checks = "go test"
	}
	if err := Build(ctx, dir, d.Repo); err != nil {
		return d, fmt.Errorf("demo: %w", err)
	}
	var delay time.Duration
	if opt.Slow {
		delay = Delay
	}
	d.Plan = []byte(Plan(dir, opt.Kind, goErr == nil, delay))
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), d.Plan, 0o644); err != nil {
		return d, err
	}
	if opt.Kind != "command" {
		srv, err := ModelServer(opt.Kind, delay)
		if err != nil {
			return d, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return d, err
		}
		hs := llmfake.Serve(l, srv)
		d.close = append(d.close, func() { hs.Close() })
		d.ModelURL = hs.URL
	}
	return d, nil
}

// WriteVerdict is the demo's last line: that it worked as designed (the
// gate's refusal of tidy-tests included), or what the run did not show.
func WriteVerdict(w io.Writer, rep *runs.Report, shown error) {
	fmt.Fprintln(w)
	if shown != nil {
		fmt.Fprintf(w, "apiary demo: something went wrong: %v\n", shown)
		return
	}
	fmt.Fprintf(w, "apiary demo: worked as designed — %d of %d tasks integrated; the run reads \"failed\" only because the gate refused tidy-tests, whose agent deleted a test: that refusal is the gate doing its job\n",
		rep.Totals.Succeeded, rep.Totals.Tasks)
}
