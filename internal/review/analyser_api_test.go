package review

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// writeTree writes files under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAPIDiff(t *testing.T) {
	t.Parallel()
	const base = `package lib

// T is a type.
type T struct {
	Name string
	Age  int
	hidden bool
}

type I interface {
	M(int) error
}

func F(a, b int) (string, error) { return "", nil }

func (t *T) Method(x string) {}

func (t T) Value() int { return 0 }

const (
	A Kind = iota
	B
)

type Kind int

var V = 3

func unexported() {}
`
	tests := []struct {
		name    string
		head    string // replaces lib/lib.go; "" deletes it
		mod     string // head go.mod, if not the base's
		extra   map[string]string
		version []string
		want    []string // kinds and evidence prefixes, sorted
	}{
		{name: "unchanged but renamed params", head: gittest.Replace(base, "func F(a, b int)", "func F(x, y int)"), want: nil},
		{name: "removed func", head: gittest.Replace(base, "func F(a, b int) (string, error) { return \"\", nil }\n", ""),
			want: []string{"api-break high lib/lib.go:14"}},
		{name: "changed signature", head: gittest.Replace(base, "func F(a, b int)", "func F(a int, b int64)"),
			want: []string{"api-break high lib/lib.go:14"}},
		{name: "added func and field", head: gittest.Replace(gittest.Replace(base, "\tAge  int\n", "\tAge  int\n\tMail string\n"), "func unexported", "func G() {}\n\nfunc unexported"),
			want: []string{"api-addition info lib/lib.go:30", "api-addition info lib/lib.go:7"}},
		{name: "removed field", head: gittest.Replace(base, "\tAge  int\n", ""), want: []string{"api-break high lib/lib.go:6"}},
		{name: "interface grows", head: gittest.Replace(base, "\tM(int) error\n", "\tM(int) error\n\tN()\n"), want: []string{"api-break high lib/lib.go:10"}},
		{name: "receiver changes", head: gittest.Replace(base, "func (t T) Value()", "func (t *T) Value()"), want: []string{"api-break high lib/lib.go:18"}},
		{name: "const type inherited", head: gittest.Replace(base, "\tA Kind = iota\n\tB\n", "\tA int = iota\n\tB\n"),
			want: []string{"api-break high lib/lib.go:21", "api-break high lib/lib.go:22"}},
		{name: "unexported change", head: gittest.Replace(base, "func unexported() {}", "func unexported(x int) {}"), want: nil},
		{name: "package removed", head: "", want: []string{"api-break high lib"}},
		{name: "break with version file", head: gittest.Replace(base, "func F(a, b int)", "func F(a int)"), extra: map[string]string{"VERSION": "2\n"},
			version: []string{"VERSION"}, want: []string{"api-break high lib/lib.go:14", "version-bump info VERSION"}},
		{name: "break with major module", head: gittest.Replace(base, "func F(a, b int)", "func F(a int)"), mod: "module ex.com/m/v2\n\ngo 1.22\n",
			want: []string{"api-break high lib/lib.go:14", "version-bump info go.mod"}},
		{name: "internal and main are not API", head: base, extra: map[string]string{
			"internal/x/x.go": "package x\n\nfunc Gone() {}\n", "cmd/tool/main.go": "package main\n\nfunc Exported() {}\n"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Change{BaseDir: t.TempDir(), HeadDir: t.TempDir()}
			writeTree(t, c.BaseDir, map[string]string{"go.mod": goMod, "lib/lib.go": base,
				"internal/x/x.go": "package x\n\nfunc Kept() {}\n", "cmd/tool/main.go": "package main\n\nfunc main() {}\n"})
			head := map[string]string{"go.mod": goMod, "internal/x/x.go": "package x\n\nfunc Kept() {}\n", "cmd/tool/main.go": "package main\n\nfunc main() {}\n"}
			if tt.head != "" {
				head["lib/lib.go"] = tt.head
			}
			if tt.mod != "" {
				head["go.mod"] = tt.mod
			}
			for p, s := range tt.extra {
				head[p] = s
			}
			writeTree(t, c.HeadDir, head)
			status := byte('M')
			if tt.head == "" {
				status = 'D'
			}
			c.Changes = []git.Change{{Status: status, Path: "lib/lib.go"}}
			for p := range tt.extra {
				c.Changes = append(c.Changes, git.Change{Status: 'M', Path: p})
			}
			fs, err := APIDiff{VersionFiles: tt.version}.Analyse(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(fs); !slices.Equal(got, tt.want) {
				t.Errorf("findings %v, want %v", got, tt.want)
				for _, f := range fs {
					t.Logf("  %s", f.Evidence)
				}
			}
		})
	}
}
