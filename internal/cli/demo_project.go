package cli

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

const demoGoMod = "module example.com/calc\n\ngo 1.22\n"

const demoAdd = `// Package calc is the project of apiary's demo.
package calc

// Add returns a + b.
func Add(a, b int) int { return a + b }
`

const demoAddTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}

func TestAddNegative(t *testing.T) {
	if got := Add(-2, -3); got != -5 {
		t.Fatalf("Add(-2, -3) = %d, want -5", got)
	}
}
`

// demoAddTestTidied is what tidy-tests leaves: a test deleted.
const demoAddTestTidied = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}
`

const demoMul = `package calc

// Mul returns a * b.
func Mul(a, b int) int { return a * b }
`

const demoMulTest = `package calc

import "testing"

func TestMul(t *testing.T) {
	if got := Mul(4, 5); got != 20 {
		t.Fatalf("Mul(4, 5) = %d, want 20", got)
	}
}
`

const demoSub = `package calc

// Sub returns a - b.
func Sub(a, b int) int { return a - b }
`

const demoSubTest = `package calc

import "testing"

func TestSub(t *testing.T) {
	if got := Sub(7, 2); got != 5 {
		t.Fatalf("Sub(7, 2) = %d, want 5", got)
	}
}
`

const demoMain = `// Command calc prints a few results of package calc.
package main

import (
	"fmt"

	"example.com/calc/calc"
)

func main() {
	fmt.Println(calc.Add(2, 3), calc.Sub(7, 2), calc.Mul(4, 5))
}
`

const (
	demoUsage   = "Import example.com/calc/calc and call Add, Sub or Mul.\n"
	demoContrib = "Send a patch with a test for every change.\n"
)

// demoReadme builds README.md with each section's text, or TODO.
func demoReadme(usage, contrib string) string {
	if usage == "" {
		usage = "TODO\n"
	}
	if contrib == "" {
		contrib = "TODO\n"
	}
	return "# calc\n\nA tiny calculator library, built by a swarm of agents.\n\n## Usage\n\n" + usage + "\n## Contributing\n\n" + contrib
}

// demoTask is one task of the demo plan and the files its agent writes.
type demoTask struct {
	id, objective string
	scope         []string
	deps          []string
	check         string // with go on PATH
	fallback      string // without go
	estimate      int
	files         map[string]string
}

func demoTasks() []demoTask {
	goTest := "go test ./..."
	return []demoTask{
		{id: "mul", objective: "Add Mul(a, b int) int to package calc, with a test.", scope: []string{"calc/mul.go", "calc/mul_test.go"},
			check: goTest, fallback: "grep -q 'func Mul' calc/mul.go", estimate: 30,
			files: map[string]string{"calc/mul.go": demoMul, "calc/mul_test.go": demoMulTest}},
		{id: "sub", objective: "Add Sub(a, b int) int to package calc, with a test.", scope: []string{"calc/sub.go", "calc/sub_test.go"},
			check: goTest, fallback: "grep -q 'func Sub' calc/sub.go", estimate: 30,
			files: map[string]string{"calc/sub.go": demoSub, "calc/sub_test.go": demoSubTest}},
		{id: "usage-doc", objective: "Write the Usage section of README.md.", scope: []string{"README.md"},
			check: "grep -q '^## Usage' README.md", estimate: 20,
			files: map[string]string{"README.md": demoReadme(demoUsage, "")}},
		{id: "contrib-doc", objective: "Write the Contributing section of README.md.", scope: []string{"README.md"},
			check: "grep -q '^## Contributing' README.md", estimate: 20,
			files: map[string]string{"README.md": demoReadme("", demoContrib)}},
		{id: "tidy-tests", objective: "Tidy calc/add_test.go.", scope: []string{"calc/add_test.go"},
			check: goTest, fallback: "grep -q 'func TestAdd' calc/add_test.go", estimate: 20,
			files: map[string]string{"calc/add_test.go": demoAddTestTidied}},
		{id: "cmd", objective: "Add a command cmd/calc that prints results of Add, Sub and Mul.", scope: []string{"cmd/calc/"},
			deps: []string{"mul", "sub", "{task: usage-doc, kind: control}", "{task: contrib-doc, kind: control}"}, check: "go vet ./... && " + goTest, fallback: "grep -q 'calc.Mul' cmd/calc/main.go", estimate: 30,
			files: map[string]string{"cmd/calc/main.go": demoMain}},
	}
}

// demoBase is the repository the demo starts from.
func demoBase() map[string]string {
	return map[string]string{"go.mod": demoGoMod, "calc/add.go": demoAdd, "calc/add_test.go": demoAddTest, "README.md": demoReadme("", "")}
}

// demoRunScript is the command agents' entry point: it plays a coding
// agent by copying the files prepared for its task into the worktree.
const demoRunScript = `#!/bin/sh
# apiary demo agent: writes the files prepared for task $APIARY_TASK.
set -e
cp -R "$(dirname "$0")/../content/$APIARY_TASK/." .
`

// demoReconcileScript is the neutral command reconciler: it re-applies the
// task's change to each overlapping file with a three-way text merge.
const demoReconcileScript = `#!/bin/sh
# apiary demo reconciler: merges the task's change into the head's version.
set -e
tmp=$(mktemp -d)
printf '%s\n' "$APIARY_RECONCILE_PATHS" | while IFS= read -r p; do
  [ -n "$p" ] || continue
  git show "$APIARY_RECONCILE_BASE:$p" > "$tmp/base"
  git show "$APIARY_RECONCILE_CANDIDATE:$p" > "$tmp/theirs"
  git merge-file "$p" "$tmp/base" "$tmp/theirs"
done
rm -rf "$tmp"
`
