package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/runs"
)

// supFlags are `apiary run`'s supervision and authority flags.
type supFlags struct {
	deadline       time.Duration
	maxDepth       int
	spawnWindow    int
	escrowCommands stringList
	escrowTools    stringList
}

func (f *supFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.deadline, "deadline", 0, "cancel whatever is still running or waiting after `DURATION`")
	fs.IntVar(&f.maxDepth, "max-depth", 0, "how deep tasks may spawn children, `N` levels (default 2)")
	fs.IntVar(&f.spawnWindow, "spawn-window", 0, "a task's unfinished spawned children before its next spawn waits, `N` (default 4)")
	fs.Var(&f.escrowCommands, "escrow-command", "`COMMAND` prefix agents need a human's approval for (repeatable; default \"git push\")")
	fs.Var(&f.escrowTools, "escrow-tool", "`TOOL` agents need a human's approval for (repeatable)")
}

// apply puts the flags in cfg, with the apiary executable agents call (the
// escrow pre-push hook), the model host their tokens allow and, on a
// terminal, the escrow prompt.
func (f *supFlags) apply(e *env, cfg *runs.Config, modelURL string) error {
	if f.maxDepth < 0 || f.spawnWindow < 0 || f.deadline < 0 {
		return usagef("--max-depth, --spawn-window and --deadline must not be negative")
	}
	cfg.MaxDepth, cfg.SpawnWindow = f.maxDepth, f.spawnWindow
	if f.deadline > 0 {
		cfg.Deadline = time.Now().Add(f.deadline)
	}
	if len(f.escrowCommands) > 0 || len(f.escrowTools) > 0 {
		cfg.Escrow = runs.EscrowPolicy{Commands: append([]string{"git push"}, f.escrowCommands...), Tools: f.escrowTools}
	}
	if ms, ok := cfg.Writes.(mcpSurface); ok {
		cfg.ApiaryBin = ms.exe
		// `apiary` on the agents' PATH, for apiary spawn and friends, in
		// front of the PATH they get anyway (this process's).
		path := e.Getenv("PATH")
		if path == "" {
			path = os.Getenv("PATH")
		}
		cfg.AgentPath = filepath.Dir(ms.exe) + string(os.PathListSeparator) + path
	}
	if u, err := url.Parse(modelURL); err == nil && u.Host != "" {
		cfg.ModelHosts = []string{u.Host}
	}
	if f, ok := e.Stdin.(*os.File); ok && isTerminal(f) && isTerminal(e.Stderr) {
		cfg.Ask = (&ttyAsker{in: bufio.NewReader(e.Stdin), out: e.Stderr}).ask
	}
	return nil
}

// ttyAsker asks the human at the terminal about escrow requests, one at a
// time.
type ttyAsker struct {
	mu    sync.Mutex
	in    *bufio.Reader
	out   io.Writer
	lines chan string // started on first use; read until stdin ends
	once  sync.Once
}

func (a *ttyAsker) ask(ctx context.Context, req runs.EscrowRequest) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.once.Do(func() {
		a.lines = make(chan string)
		// The reader lives as long as the terminal: a blocked read cannot
		// be interrupted, and the command's process ends with the run.
		go func() {
			defer close(a.lines)
			for {
				l, err := a.in.ReadString('\n')
				if err != nil {
					return
				}
				a.lines <- l
			}
		}()
	})
	fmt.Fprintf(a.out, "\napiary: task %s (run %s) asks to run %s %q [escrow request %s, via %s]. Approve? [y/N] ",
		req.Task, req.Run, req.Kind, req.Operation, req.ID, strings.Join(req.Chain, " → "))
	select {
	case l, ok := <-a.lines:
		if !ok {
			return false, io.EOF
		}
		ans := strings.ToLower(strings.TrimSpace(l))
		return ans == "y" || ans == "yes", nil
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}
