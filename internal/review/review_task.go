package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// AnalyserRun is what one analyser (or reviewer) task did.
type AnalyserRun struct {
	Name     string          `json:"name"`
	Kind     string          `json:"kind"` // builtin | agent | reviewer
	Uses     string          `json:"uses"` // the built-in or the agent profile
	TaskID   string          `json:"task_id,omitempty"`
	Round    int             `json:"round,omitempty"` // 1, or 2 for reactions
	Status   string          `json:"status"`          // ok | failed | skipped
	Reason   string          `json:"reason,omitempty"`
	Findings int             `json:"findings"`
	WallS    float64         `json:"wall_s"`
	Usage    *envelope.Usage `json:"usage,omitempty"`
}

func (a *AnalyserConfig) kind() string {
	if a.Builtin != "" {
		return "builtin"
	}
	return "agent"
}

func (a *AnalyserConfig) uses() string {
	if a.Builtin != "" {
		return a.Builtin
	}
	return a.Agent
}

// defaultAnalyserObjective is an agent analyser's objective when the
// configuration gives none.
const defaultAnalyserObjective = "Review the change for defects the deterministic analysers cannot see: logic errors, injection, unsafe input handling, missing tests."

// runAnalyser runs one analyser task: its envelope, then the built-in or
// the agent, then its findings. Only infrastructure failures are errors;
// an analyser that fails yields an analyser-error finding (high, or low
// when optional), so a review never passes because an analyser broke.
func (rv *reviewRun) runAnalyser(ctx context.Context, a *AnalyserConfig, round int, inputs []Finding) error {
	start := rv.now()
	run := AnalyserRun{Name: a.Name, Kind: a.kind(), Uses: a.uses(), Round: round, Status: "ok"}
	taskID, err := envelope.NewTaskID(start, rv.rnd)
	if err != nil {
		return err
	}
	run.TaskID = taskID
	objective := a.Objective
	if a.Builtin != "" {
		objective = "Built-in analyser " + a.Builtin + ": report findings about the change " + rv.mergeBase + ".." + rv.head + "."
	} else if objective == "" {
		objective = defaultAnalyserObjective
	}
	env := rv.envelope(taskID, a.Name, objective, a.Budget, a.uses(), a.Builtin == "")
	if err := rv.holdEnvelope(a.Name, env); err != nil {
		return err
	}
	var cites []string
	for _, f := range inputs {
		cites = append(cites, f.ID)
	}
	var fs []Finding
	var failure error
	if a.Builtin != "" {
		fs, failure = rv.runBuiltin(ctx, a, rv.taskDir(a.Name))
	} else {
		var usage *envelope.Usage
		fs, usage, failure = rv.runAgent(ctx, reviewAgentTask{name: a.Name, profile: a.Agent, taskID: taskID, role: attempt.RoleAnalyser,
			objective: objective, env: env, budget: env.Budget, inputs: inputs})
		run.Usage = usage
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if failure != nil {
		sev := SevHigh
		if a.Optional {
			sev = SevLow
		}
		run.Status, run.Reason = "failed", failure.Error()
		fs = append(fs, Finding{Kind: KindAnalyserError, Severity: sev,
			Evidence: fmt.Sprintf("analyser %s (%s) failed: %v", a.Name, a.uses(), failure)})
	}
	stored, err := rv.addFindings(ctx, a.Name, fs, cites)
	if err != nil {
		return err
	}
	run.Findings = len(stored)
	run.WallS = rv.now().Sub(start).Seconds()
	rv.record(run)
	return nil
}

// holdEnvelope keeps a task's envelope for its folder.
func (rv *reviewRun) holdEnvelope(task string, env *envelope.Envelope) error {
	b, err := envelope.EncodeEnvelope(env)
	if err != nil {
		return fmt.Errorf("review envelope: %w", err)
	}
	rv.hold(task, "envelope.json", append(b, '\n'))
	return nil
}

// envelope is a review task's envelope: references to the head and the
// changed paths, no write scope.
func (rv *reviewRun) envelope(taskID, name, objective string, b Budget, profile string, model bool) *envelope.Envelope {
	paths := rv.paths
	if len(paths) > 10000 {
		paths = paths[:10000]
	}
	net, tools := envelope.NetworkNone, []string(nil)
	if model {
		net, tools = envelope.NetworkGateway, readOnlyTools()
	}
	prof := strings.ReplaceAll(profile, ".", "-")
	if !model {
		prof = "builtin-" + profile
	}
	return &envelope.Envelope{
		TaskID: taskID, RunID: rv.id, Name: name, Objective: objective,
		Inputs:     envelope.Inputs{Workspace: "git:" + rv.head, Paths: slices.Clone(paths)},
		Authority:  envelope.Authority{Tools: tools, WriteScope: []string{}, Network: net},
		Budget:     b.envelope(),
		Completion: envelope.Completion{Forbidden: []string{}},
		Deps:       []envelope.Dep{},
		Agent:      envelope.AgentRef{Profile: prof},
		Tags:       []string{"review"},
	}
}

// readOnlyTools are the Claude Code tools of analysers and reviewers.
func readOnlyTools() []string { return []string{"Read", "Grep", "Glob"} }

// runBuiltin runs a built-in analyser on the checkouts.
func (rv *reviewRun) runBuiltin(ctx context.Context, a *AnalyserConfig, dir string) ([]Finding, error) {
	an, err := rv.builtin(a)
	if err != nil {
		return nil, err
	}
	scratch := filepath.Join(dir, "scratch") // the built-in's logs: not an agent's state
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return nil, err
	}
	c := &Change{Repo: rv.repo, Base: rv.mergeBase, Head: rv.head, Changes: rv.changes,
		HeadDir: rv.headDir, BaseDir: rv.baseDir, Scratch: scratch, Env: rv.opt.Env}
	return an.Analyse(ctx, c)
}

// builtin constructs a built-in analyser from its decoded options.
func (rv *reviewRun) builtin(a *AnalyserConfig) (Analyser, error) {
	secs := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	switch o := a.opts.(type) {
	case *secretOpts:
		s := SecretScan{Scanner: rv.opt.Secrets, MaxFileBytes: o.MaxFileBytes}
		if len(o.Severity) > 0 {
			s.Severity = DefaultSecretSeverity()
			for k, v := range o.Severity {
				s.Severity[k], _ = ParseSeverity(v)
			}
		}
		return s, nil
	case *forbiddenOpts:
		return ForbiddenScan{Patterns: o.Patterns, Sealed: o.Sealed}, nil
	case *goTestOpts:
		return GoTest{Packages: o.Packages, Args: o.Args, Timeout: secs(o.TimeoutS)}, nil
	case *goBenchOpts:
		return GoBench{Packages: o.Packages, Pattern: o.Pattern, Benchtime: o.Benchtime, Count: o.Count,
			Alpha: o.Alpha, Timeout: secs(o.TimeoutS)}, nil
	case *apiOpts:
		return APIDiff{IncludeInternal: o.IncludeInternal, VersionFiles: o.VersionFiles}, nil
	case *decisionOpts:
		return Decisions{Dir: o.Dir}, nil
	}
	return nil, fmt.Errorf("unknown built-in %q", a.Builtin)
}

// reviewAgentTask is one agent run of a review: an analyser or a reviewer.
type reviewAgentTask struct {
	name, profile, taskID, role string
	objective                   string
	env                         *envelope.Envelope // written into its checkout
	budget                      envelope.Budget
	inputs                      []Finding // findings it reacts to (given to it)
	// files are more inputs, placed in its private directory: file name →
	// content, and the environment variable that names each.
	files map[string][]byte
	vars  map[string]string
	// prompt renders the task's prompt from the paths it is given.
	prompt func(p agentPaths) string
}

// agentPaths are the places an agent task is told about.
type agentPaths struct {
	envelope string            // its envelope, in its checkout
	output   string            // where it may write its answer ($APIARY_FINDINGS)
	inputs   string            // the findings it reacts to ($APIARY_SUBSCRIBED), "" if none
	files    map[string]string // the extra inputs, by file name
}

// runAgentRaw runs an agent in a checkout of the change's head of its own
// (read-only) with a private directory of its own (see review_private.go)
// and returns its answer: the file it wrote to $APIARY_FINDINGS, else its
// final message. Its transcript and answer are held for its folder, not
// written there. An agent that changed its checkout anyway — a tracked,
// untracked or ignored file — is recorded for the next integrity check
// (see checkIntact): its answer may rest on a tree that is not the change,
// and its notes may have reached another task.
func (rv *reviewRun) runAgentRaw(ctx context.Context, t reviewAgentTask) (string, *envelope.Usage, error) {
	p, ok := rv.cfg.profile(t.profile)
	if !ok {
		return "", nil, fmt.Errorf("%w: %q", attempt.ErrUnknownAgent, t.profile)
	}
	if bin := rv.opt.AgentBin[p.Kind]; bin != "" && p.Kind != agent.KindCommand {
		p.Bin = bin
	}
	if p.Kind == agent.KindClaude && len(p.Tools) == 0 {
		p.Tools = readOnlyTools()
	}
	priv, err := rv.privateDir()
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(priv)
	wt := rv.worktreeDir(t.name + "-" + t.taskID)
	paths := agentPaths{envelope: attempt.EnvelopeIn(wt), output: filepath.Join(priv, "output.json"), files: map[string]string{}}
	env := map[string]string{"APIARY_REVIEW": rv.id, "APIARY_TASK": t.name, "APIARY_ROLE": t.role,
		"APIARY_HEAD": rv.head, "APIARY_BASE": rv.mergeBase, "APIARY_FINDINGS": paths.output, "TMPDIR": filepath.Join(priv, "tmp")}
	if len(t.inputs) > 0 {
		paths.inputs = filepath.Join(priv, "subscribed.json")
		b, err := json.MarshalIndent(t.inputs, "", "  ")
		if err != nil {
			return "", nil, err
		}
		if err := os.WriteFile(paths.inputs, b, 0o600); err != nil {
			return "", nil, err
		}
		env["APIARY_SUBSCRIBED"] = paths.inputs
		rv.hold(t.name, "subscribed.json", b)
	}
	for name, b := range t.files {
		fp := filepath.Join(priv, name)
		if err := os.WriteFile(fp, b, 0o600); err != nil {
			return "", nil, err
		}
		paths.files[name] = fp
		if v := t.vars[name]; v != "" {
			env[v] = fp
		}
	}
	logPath := filepath.Join(priv, "agent.log")
	published := filepath.Join(rv.taskDir(t.name), "agent.log")
	var modified []string
	out, err := attempt.Run(ctx, attempt.Spec{
		Repo: rv.repo, Worktree: wt, Base: rv.head, Lock: rv.wt, Envelope: t.env,
		Profile: p, Prompt: t.prompt(paths), Env: env, Home: filepath.Join(priv, "home"), Log: logPath, Grace: rv.opt.AgentGrace,
		Timeout: time.Duration(t.budget.WallClockS * float64(time.Second)),
		Models:  rv.opt.Models, Ref: attempt.TaskRef{Run: rv.id, Task: t.name, TaskID: t.taskID, Attempt: 1, Role: t.role},
		Logger: rv.log, Now: rv.now,
		Hooks: attempt.Hooks{
			Prepare:  func(wt string) error { return setWritable(wt, false) },
			Teardown: func(wt string) { _ = setWritable(wt, true) },
			Collect: func(ctx context.Context, wt string) error {
				var err error
				modified, err = rv.leftIn(ctx, wt)
				return err
			},
		},
	})
	if b, rerr := readTail(logPath, maxTranscript); rerr == nil {
		rv.hold(t.name, "agent.log", b)
	}
	answer, answerErr := rundir.ReadLimited(paths.output, 16<<20)
	if answerErr == nil {
		rv.hold(t.name, "output.json", answer)
	}
	var usage *envelope.Usage
	if out.Ran {
		usage = &out.Usage
	}
	switch {
	case ctx.Err() != nil:
		return "", usage, ctx.Err()
	case err != nil:
		return "", usage, err
	case out.TimedOut:
		return "", usage, fmt.Errorf("stopped after its %gs wall-clock budget", t.budget.WallClockS)
	case out.Agent.Exit != 0:
		return "", usage, fmt.Errorf("agent exited %d%s (log %s)", out.Agent.Exit, signalNote(out.Agent.Signal), published)
	}
	if len(modified) > 0 {
		if len(modified) > 20 {
			modified = append(modified[:20], "...")
		}
		rv.mu.Lock()
		rv.tainted = append(rv.tainted, t.name+" ("+strings.Join(modified, ", ")+")")
		rv.mu.Unlock()
	}
	if answerErr == nil {
		return string(answer), usage, nil
	}
	if rep := out.Agent.Report; rep != nil && rep.Text != "" {
		return rep.Text, usage, nil
	}
	return "", usage, fmt.Errorf("the agent gave no answer: nothing in $APIARY_FINDINGS and no final message (log %s)", published)
}

// leftIn lists what a task left in its checkout: every path git sees
// beyond the commit (ignored files too) and anything in the checkout's
// .apiary directory but the envelope the attempt put there.
func (rv *reviewRun) leftIn(ctx context.Context, wt string) ([]string, error) {
	st, err := rv.repo.At(wt).StatusIgnored(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range st {
		if e.Path != rundir.StateDir && !strings.HasPrefix(e.Path, rundir.StateDir+"/") {
			out = append(out, e.Path)
		}
	}
	state := filepath.Join(wt, rundir.StateDir)
	envPath := attempt.EnvelopeIn(wt)
	err = filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || p == envPath {
			return nil
		}
		rel, _ := filepath.Rel(wt, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out, err
}

func signalNote(sig string) string {
	if sig == "" {
		return ""
	}
	return " (" + sig + ")"
}

// runAgent runs an agent analyser and parses its findings.
func (rv *reviewRun) runAgent(ctx context.Context, t reviewAgentTask) ([]Finding, *envelope.Usage, error) {
	t.prompt = func(p agentPaths) string { return rv.analyserPrompt(t.name, t.objective, p) }
	text, usage, err := rv.runAgentRaw(ctx, t)
	if err != nil {
		return nil, usage, err
	}
	fs, err := ParseFindings(text)
	return fs, usage, err
}

// analyserPrompt tells an agent analyser its task by reference.
func (rv *reviewRun) analyserPrompt(name, objective string, p agentPaths) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nYou are the review analyser %q of apiary review %s. Your working directory is a read-only checkout of the change's head %s; the change is `git diff %s %s`. Do not modify any file.\n",
		objective, name, rv.id, rv.head, rv.mergeBase, rv.head)
	fmt.Fprintf(&b, "\nTask envelope (JSON, lists the changed paths): %s\n", p.envelope)
	if p.inputs != "" {
		fmt.Fprintf(&b, "You react to findings of other analysers, in %s ($APIARY_SUBSCRIBED).\n", p.inputs)
	}
	b.WriteString(findingsFormat)
	return b.String()
}

// findingsFormat is the answer format of agent analysers.
const findingsFormat = `
Answer with JSON only, as your final message (or write it to the file $APIARY_FINDINGS):
{"findings": [{"kind": "short-kebab-case", "severity": "info|low|medium|high|critical", "file": "path/relative/to/the/repository", "line": 1, "evidence": "what you saw and why it matters"}]}
An empty list means you found nothing.
`
