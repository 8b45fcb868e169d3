package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsEveryCommand keeps the README's table of subcommands
// current: every command apiary has must appear in it, and every command
// the table names must exist. A row's first cell is `apiary A B X\|Y`:
// the commands "apiary A B X" and "apiary A B Y" (and their parents).
func TestReadmeListsEveryCommand(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `(apiary[^`]*)` \\|")
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		var words []string
		for _, w := range strings.Fields(m[1]) {
			if strings.HasPrefix(w, "[") || strings.ToUpper(w) == w {
				break // arguments such as [COMMAND] or RUN_ID
			}
			words = append(words, w)
		}
		last := words[len(words)-1]
		prefix := strings.Join(words[:len(words)-1], " ")
		for _, alt := range strings.Split(last, `\|`) {
			p := prefix + " " + alt
			for p != "" {
				listed[p] = true
				p = p[:max(0, strings.LastIndex(p, " "))]
			}
		}
	}
	all := map[string]bool{}
	walk(rootCommand(), "apiary", func(c *command, path string) {
		all[path] = true
		if !listed[path] {
			t.Errorf("README's command table does not list %q", path)
		}
	})
	for p := range listed {
		if !all[p] {
			t.Errorf("README's command table lists %q, which does not exist", p)
		}
	}
}
