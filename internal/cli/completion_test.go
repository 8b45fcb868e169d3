package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/cmdtree"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// apiaryOnPath returns a PATH whose first directory holds "apiary": this
// test binary under that name, which runs as apiary (see TestMain).
func apiaryOnPath(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "apiary")); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// shellCase is a command line typed up to the cursor and what completing
// its last word must offer.
type shellCase struct {
	words []string // the last is the word under the cursor
	want  []string // exactly these candidates (order aside); nil: none
}

// treeCases derives, from the command tree itself, what completion must
// offer after every command path: its subcommands, and after "--" every
// flag. A command added or a flag declared is covered without editing the
// test, and a script that stopped following the tree fails it.
func treeCases() []shellCase {
	var cases []shellCase
	for _, n := range cmdtree.Tree(rootCommand()) {
		words := strings.Fields(n.Path)
		if len(n.Subs) > 0 {
			cases = append(cases, shellCase{append(slices.Clone(words), ""), cmdtree.Names(n.Subs)})
		}
		cases = append(cases, shellCase{append(slices.Clone(words), "--"), cmdtree.FlagNames(n.Flags, false)})
	}
	return cases
}

// handCases are the walks the tree cases do not take: prefixes, a flag's
// value between words, flags before a subcommand, single-dash flags.
var handCases = []shellCase{
	{[]string{"apiary", "ga"}, []string{"gateway"}},
	{[]string{"apiary", "gateway", "k"}, []string{"key"}},
	{[]string{"apiary", "gateway", "key", "cr"}, []string{"create"}},
	{[]string{"apiary", "gateway", "key", "create", "--budget-"}, []string{"--budget-tokens", "--budget-usd"}},
	{[]string{"apiary", "--v"}, []string{"--version"}},
	{[]string{"apiary", "board", "runs", "--board", "x", "--j"}, []string{"--json"}},
	{[]string{"apiary", "-version", "boa"}, []string{"board"}},
	{[]string{"apiary", "completion", "--h"}, []string{"--help"}},
}

func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(slices.Compact(g), slices.Compact(w))
}

// TestCompletionBash sources `apiary completion bash` in a real bash,
// checks that it registers a completion for apiary, and completes every
// command path through the generated function the way bash's programmable
// completion calls it (COMP_WORDS, COMP_CWORD, COMPREPLY). A flag's value
// offers nothing, so that bash falls back to file names (-o default).
func TestCompletionBash(t *testing.T) {
	t.Parallel()
	bash := envtest.Command(t, "bash")
	cases := append(treeCases(), handCases...)
	cases = append(cases,
		shellCase{[]string{"apiary", "gateway", "--listen", ""}, nil},
		shellCase{[]string{"apiary", "run", "--max-parallel", ""}, nil},
	)
	var script strings.Builder
	script.WriteString(`source <(apiary completion bash) || exit 1
complete -p apiary
t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _apiary; echo "${COMPREPLY[*]}"; }
`)
	for _, c := range cases {
		script.WriteString("t")
		for _, w := range c.words {
			script.WriteString(" " + cmdtree.ShellQuote(w))
		}
		script.WriteString("\n")
	}
	cmd := exec.CommandContext(t.Context(), bash, "--norc", "--noprofile", "-c", script.String())
	cmd.Env = append(os.Environ(), "PATH="+apiaryOnPath(t))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, stderrOf(err))
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases)+1 {
		t.Fatalf("bash printed %d lines for %d cases:\n%s", len(lines), len(cases), out)
	}
	if lines[0] != "complete -o default -F _apiary apiary" {
		t.Errorf("complete -p apiary = %q", lines[0])
	}
	for i, c := range cases {
		if got := strings.Fields(lines[i+1]); !sameSet(got, c.want) {
			t.Errorf("bash completes %q to %q, want %q", c.words, got, c.want)
		}
	}
}

// TestCompletionFish loads `apiary completion fish` in a real fish and asks
// it to complete each command line (complete -C, which evaluates the
// script's conditions as an interactive fish would).
func TestCompletionFish(t *testing.T) {
	t.Parallel()
	fish := envtest.Command(t, "fish")
	cases := append(treeCases(), handCases...)
	var script strings.Builder
	script.WriteString("apiary completion fish | source; or exit 1\n")
	for _, c := range cases {
		script.WriteString("complete -C " + cmdtree.FishQuote(strings.Join(c.words, " ")) + "; echo '<end>'\n")
	}
	cmd := exec.CommandContext(t.Context(), fish, "--no-config", "-c", script.String())
	cmd.Env = append(os.Environ(), "PATH="+apiaryOnPath(t), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, stderrOf(err))
	}
	blocks := strings.Split(string(out), "<end>\n")
	if len(blocks) != len(cases)+1 {
		t.Fatalf("fish printed %d blocks for %d cases:\n%s", len(blocks)-1, len(cases), out)
	}
	for i, c := range cases {
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(blocks[i], "\n"), "\n") {
			if l != "" {
				got = append(got, strings.SplitN(l, "\t", 2)[0])
			}
		}
		if !sameSet(got, c.want) {
			t.Errorf("fish completes %q to %q, want %q", c.words, got, c.want)
		}
	}
}

// TestCompletionZsh loads `apiary completion zsh` after compinit in a real
// zsh: it registers _apiary for apiary, its walk over the typed words finds
// each command path's subcommands and flags, and in a real terminal (tmux)
// Tab completes a command line word by word through zsh's completion
// system.
func TestCompletionZsh(t *testing.T) {
	t.Parallel()
	zsh := envtest.Command(t, "zsh")
	path := apiaryOnPath(t)
	cases := append(treeCases(), handCases...)
	var script strings.Builder
	script.WriteString(`autoload -U compinit && compinit -u -D || exit 1
source <(apiary completion zsh) || exit 1
print -r -- "comps: $_comps[apiary]"
t() {
	local REPLY
	local -a words reply out
	words=("$@")
	CURRENT=$#words
	_apiary_path
	if [[ ${words[-1]} == -* ]]; then _apiary_words "$REPLY" flags; else _apiary_words "$REPLY" subs; fi
	for w in ${reply%%:*}; do [[ $w == ${words[-1]}* ]] && out+=($w); done
	print -r -- "$out"
}
`)
	for _, c := range cases {
		script.WriteString("t")
		for _, w := range c.words {
			script.WriteString(" " + cmdtree.ShellQuote(w))
		}
		script.WriteString("\n")
	}
	cmd := exec.CommandContext(t.Context(), zsh, "-f", "-c", script.String())
	cmd.Env = append(os.Environ(), "PATH="+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, stderrOf(err))
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases)+1 {
		t.Fatalf("zsh printed %d lines for %d cases:\n%s", len(lines), len(cases), out)
	}
	if lines[0] != "comps: _apiary" {
		t.Errorf("after sourcing, %q: want _apiary registered for apiary", lines[0])
	}
	for i, c := range cases {
		if got := strings.Fields(lines[i+1]); !sameSet(got, c.want) {
			t.Errorf("zsh's walk completes %q to %q, want %q", c.words, got, c.want)
		}
	}

	// Tab in an interactive zsh, through compsys and _describe. (A word
	// typed with a leading space replaces the space the last completion
	// added, as zsh does; tmux would read a leading dash as its own flag.)
	tm := newTmux(t)
	tm.start("zsh", 120, 20, []string{"PATH=" + path, "TERM=xterm-256color", "HOME=" + t.TempDir()}, zsh+" -f")
	tm.keys("zsh", "PS1='zsh> '; autoload -U compinit; compinit -u -D; source <(apiary completion zsh); echo sourced", "Enter")
	tm.waitScreen("zsh", "\nsourced")
	for _, step := range []struct{ typed, want string }{
		{"apiary gateway k", "zsh> apiary gateway key"},
		{"cr", "zsh> apiary gateway key create"},
		{" --budget-u", "zsh> apiary gateway key create --budget-usd"},
	} {
		tm.keys("zsh", step.typed, "Tab")
		tm.waitScreen("zsh", step.want)
	}
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}
