package runs

import (
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// TestRunWhereApiaryIsIgnored: a repository whose own .gitignore lists
// .apiary/ (and other patterns) runs like any other: the tasks' work is
// committed and integrated, and nothing under .apiary/ is.
func TestRunWhereApiaryIsIgnored(t *testing.T) {
	t.Parallel()
	for ignore, tree := range map[string]string{
		".apiary/\n":        ".gitignore README a.txt b.txt debug.log",
		"/.apiary\n*.log\n": ".gitignore README a.txt b.txt",
		".*\n!.gitignore\n": ".gitignore README a.txt b.txt debug.log",
	} {
		repo := gittest.NewRepo(t, map[string]string{"README": "hello\n", ".gitignore": ignore})
		src := "version: 1\nagents:\n  sh: {kind: command, argv: [sh, -c, 'echo $APIARY_TASK > $APIARY_TASK.txt; echo x > debug.log']}\n" +
			"tasks:\n  - {id: a, objective: make a, agent: sh, write_scope: [a.txt, debug.log], checks: ['test -f a.txt']}\n" +
			"  - {id: b, objective: make b, agent: sh, write_scope: [b.txt, debug.log], deps: [a]}\n"
		rep := start(t, repo, src, Config{})
		if !rep.OK() {
			t.Fatalf("%q: run %s: %+v", ignore, rep.Status, rep.Tasks)
		}
		for _, f := range []string{"a.txt", "b.txt"} {
			if got := gittest.Show(t, repo, "main", f); got != f[:1]+"\n" {
				t.Errorf("%q: main:%s = %q", ignore, f, got)
			}
		}
		if out := strings.Fields(gittest.Git(t, repo.Dir(), "ls-tree", "-r", "--name-only", "main")); strings.Join(out, " ") != tree {
			t.Errorf("%q: main holds %q, want %q", ignore, out, tree)
		}
	}
}
