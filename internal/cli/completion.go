package cli

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/apiary-dev/apiary/internal/cmdtree"
)

// completionCommand prints the completion script cmdtree generates from the
// command tree of this binary, so a new command or flag is completed as soon
// as it is declared.
func completionCommand(root *command) *command {
	return &command{
		Name:    "completion",
		Args:    "bash|zsh|fish",
		Summary: "print a shell completion script for apiary's commands and flags",
		Help: `Prints a script that completes apiary's commands, subcommands and flags in
bash, zsh or fish; a flag's value and a command's arguments complete as file
names. The script is generated from the command tree of this binary, so
regenerate it after an upgrade.

  bash: source <(apiary completion bash)   (or save it under
        /etc/bash_completion.d/ or ~/.local/share/bash-completion/completions/apiary)
  zsh:  source <(apiary completion zsh)    (after compinit; or save it as
        _apiary in a directory of $fpath)
  fish: apiary completion fish > ~/.config/fish/completions/apiary.fish`,
		Examples: []string{
			"apiary completion bash > ~/.local/share/bash-completion/completions/apiary",
			"apiary completion zsh > \"${fpath[1]}/_apiary\"",
			"apiary completion fish > ~/.config/fish/completions/apiary.fish",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "the SHELL (bash, zsh or fish)"); err != nil {
					return err
				}
				gen, ok := cmdtree.Shells[args[0]]
				if !ok {
					return usagef("no completion for shell %q: want bash, zsh or fish", args[0])
				}
				var b strings.Builder
				gen(&b, cmdtree.Tree(root))
				_, err := io.WriteString(e.Stdout, b.String())
				return err
			}
		},
	}
}
