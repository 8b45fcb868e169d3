// Package demo is what `apiary demo` runs: a small Go project (real files
// under //go:embed, so gofmt, vet and the tests see them), a plan of six
// tasks on it, the scripted agents that do them — command agents, or agent
// CLIs driven by an llmfake script per task — and the check that the run
// showed every way apiary integrates or refuses work.
package demo

import (
	"embed"
	"io/fs"
	"strings"
)

// The demo's Go project, the files its scripted agents produce and the
// plan that ties them together. Every agent's output is fixed, so the
// outcome depends only on the plan's structure, never on timing: five tasks
// start from the same base (the first to integrate fast-forwards, the
// others merge), usage-doc and contrib-doc both change README.md (the
// second to integrate is reconciled), tidy-tests deletes a test (the
// forbidden-pattern gate rejects it), and cmd needs mul and sub and waits
// for the README tasks too, so nothing moves the branch under it and it
// fast-forwards. Always: 2 fast-forwards, 2 merges, 1 reconciliation, 1
// rejection.

// files is the demo project in its finished state (project: real Go
// files, so gofmt, vet and the tests see them) and the command agents'
// scripts (agents). Its go.mod is stored as go.mod.txt: a go.mod
// would make it a module of its own, which cannot be embedded.
//
//go:embed project agents
var files embed.FS

// file returns one embedded file of the demo.
func file(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("demo: missing embedded file " + name) // a build without the files cannot happen
	}
	return string(b)
}

// project returns the finished project's files by path in the
// repository (go.mod.txt as go.mod), without its README.
func project() map[string]string {
	out := map[string]string{}
	err := fs.WalkDir(files, "project", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, "project/")
		if rel == "go.mod.txt" {
			rel = "go.mod"
		}
		out[rel] = file(p)
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
}

// tidied is add_test.go as the tidy-tests agent leaves it: without
// TestAddNegative.
func tidied(src string) string {
	i := strings.Index(src, "\nfunc TestAddNegative(")
	j := strings.Index(src[i+1:], "\n}\n")
	if i < 0 || j < 0 {
		panic("demo: add_test.go has no TestAddNegative")
	}
	return src[:i] + src[i+1+j+3:]
}

// Final is the repository's tree when every task but tidy-tests has
// landed: the finished project with both README sections.
func Final() map[string]string {
	f := project()
	f["README.md"] = readme(usage, contrib)
	return f
}

const (
	usage   = "Import example.com/calc/calc and call Add, Sub or Mul.\n"
	contrib = "Send a patch with a test for every change.\n"
)

// readme builds README.md with each section's text, or TODO.
func readme(usage, contrib string) string {
	if usage == "" {
		usage = "TODO\n"
	}
	if contrib == "" {
		contrib = "TODO\n"
	}
	return "# calc\n\nA tiny calculator library, built by a swarm of agents.\n\n## Usage\n\n" + usage + "\n## Contributing\n\n" + contrib
}

// task is one task of the demo plan and the files its agent writes.
type task struct {
	id, objective string
	scope         []string
	deps          []string
	check         string // with go on PATH
	fallback      string // without go
	estimate      int
	files         map[string]string
}

func tasks() []task {
	f := project()
	goTest := "go test ./..."
	return []task{
		{id: "mul", objective: "Add Mul(a, b int) int to package calc, with a test.", scope: []string{"calc/mul.go", "calc/mul_test.go"},
			check: goTest, fallback: "grep -q 'func Mul' calc/mul.go", estimate: 30,
			files: map[string]string{"calc/mul.go": f["calc/mul.go"], "calc/mul_test.go": f["calc/mul_test.go"]}},
		{id: "sub", objective: "Add Sub(a, b int) int to package calc, with a test.", scope: []string{"calc/sub.go", "calc/sub_test.go"},
			check: goTest, fallback: "grep -q 'func Sub' calc/sub.go", estimate: 30,
			files: map[string]string{"calc/sub.go": f["calc/sub.go"], "calc/sub_test.go": f["calc/sub_test.go"]}},
		{id: "usage-doc", objective: "Write the Usage section of README.md.", scope: []string{"README.md"},
			check: "grep -q '^## Usage' README.md", estimate: 20,
			files: map[string]string{"README.md": readme(usage, "")}},
		{id: "contrib-doc", objective: "Write the Contributing section of README.md.", scope: []string{"README.md"},
			check: "grep -q '^## Contributing' README.md", estimate: 20,
			files: map[string]string{"README.md": readme("", contrib)}},
		{id: "tidy-tests", objective: "Tidy calc/add_test.go.", scope: []string{"calc/add_test.go"},
			check: goTest, fallback: "grep -q 'func TestAdd' calc/add_test.go", estimate: 20,
			files: map[string]string{"calc/add_test.go": tidied(f["calc/add_test.go"])}},
		{id: "cmd", objective: "Add a command cmd/calc that prints results of Add, Sub and Mul.", scope: []string{"cmd/calc/"},
			deps: []string{"mul", "sub", "{task: usage-doc, kind: control}", "{task: contrib-doc, kind: control}"}, check: "go vet ./... && " + goTest, fallback: "grep -q 'calc.Mul' cmd/calc/main.go", estimate: 30,
			files: map[string]string{"cmd/calc/main.go": f["cmd/calc/main.go"]}},
	}
}

// base is the repository the demo starts from: the project without
// what the tasks add.
func base() map[string]string {
	f := project()
	base := map[string]string{"README.md": readme("", "")}
	for _, p := range []string{"go.mod", "calc/add.go", "calc/add_test.go"} {
		base[p] = f[p]
	}
	return base
}
