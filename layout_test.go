package apiary_test

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/apiary-dev/apiary"

// architecture is the map whose package table is the import allow-list.
const architecture = "docs/ARCHITECTURE.md"

// layout is what the architecture map's "Packages" section says: for each
// package under internal/ it has a row for (top-level packages, and the
// subpackages with rows of their own), the internal packages it may import
// ("*" for anything), and for each heavy dependency (a module path
// prefix), the only packages that may import it.
type layout struct {
	allowed map[string][]string
	heavy   map[string][]string
}

// readLayout reads the architecture map's layout (see parseLayout).
func readLayout(t *testing.T) layout {
	t.Helper()
	b, err := os.ReadFile(architecture)
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLayout(string(b))
	if err != nil {
		t.Fatalf("%s: %v", architecture, err)
	}
	return l
}

// parseLayout parses the tables of a map's "Packages" section: rows of
// three cells are packages (name, what it provides, what it may import),
// rows of two are heavy dependencies (prefix, the packages allowed).
func parseLayout(src string) (layout, error) {
	l := layout{allowed: map[string][]string{}, heavy: map[string][]string{}}
	in := false
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			in = line == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		var names []string
		var err error
		switch len(cells) {
		case 3:
			names, err = codeNames(cells[2])
			l.allowed[name] = names
		case 2:
			names, err = codeNames(cells[1])
			l.heavy[name] = names
		default:
			err = fmt.Errorf("a table row of %d cells: %s", len(cells), line)
		}
		if err != nil {
			return layout{}, err
		}
	}
	if len(l.allowed) == 0 || len(l.heavy) == 0 {
		return layout{}, errors.New("no package table or no heavy-dependency table in its Packages section")
	}
	return l, nil
}

// codeNames reads a cell listing `names`: "anything" is "*", "—" is none.
func codeNames(cell string) ([]string, error) {
	cell = strings.TrimSpace(cell)
	switch cell {
	case "anything":
		return []string{"*"}, nil
	case "—", "-", "":
		return []string{}, nil
	}
	var out []string
	for _, part := range strings.Split(cell, ",") {
		part = strings.TrimSpace(part)
		if len(part) < 3 || part[0] != '`' || part[len(part)-1] != '`' {
			return nil, fmt.Errorf("%q is not a `name` in cell %q", part, cell)
		}
		out = append(out, part[1:len(part)-1])
	}
	return out, nil
}

type goFile struct {
	pkg     string // top-level package under internal/ ("board"), or "cmd/apiary"
	rel     string // path relative to the module root
	test    bool
	imports []string
	doc     bool // has a package comment
	name    string
}

// pkgOf is the package a file belongs to, by its path relative to the
// module root: the top-level package under internal/, else its directory.
func pkgOf(rel string) string {
	dir := filepath.ToSlash(filepath.Dir(rel))
	if rest, ok := strings.CutPrefix(dir, "internal/"); ok {
		top, _, _ := strings.Cut(rest, "/")
		return top
	}
	return dir
}

func loadFiles(t *testing.T) []goFile {
	t.Helper()
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		gf := goFile{rel: filepath.ToSlash(path), test: strings.HasSuffix(path, "_test.go"), doc: f.Doc != nil, name: f.Name.Name}
		gf.pkg = pkgOf(gf.rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			gf.imports = append(gf.imports, p)
		}
		files = append(files, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestImportAllowList enforces the architecture map's package table.
func TestImportAllowList(t *testing.T) {
	t.Parallel()
	for _, msg := range importViolations(readLayout(t), loadFiles(t)) {
		t.Error(msg)
	}
}

// owner is the package of the table that the package at rel (a path below
// internal/) belongs to: the nearest of itself and its parents that has a
// row, else its top-level package (a subpackage belongs to its top-level
// package unless the table lists it).
func (l layout) owner(rel string) string {
	for p := rel; ; {
		if _, ok := l.allowed[p]; ok {
			return p
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// importViolations returns one message for each import of files that l
// forbids, naming the importing package, the imported one and the file.
func importViolations(l layout, files []goFile) []string {
	var out []string
	for _, f := range files {
		dir := filepath.ToSlash(filepath.Dir(f.rel))
		double := isTestDouble(strings.TrimPrefix(dir, "internal/"))
		if rest, ok := strings.CutPrefix(dir, "internal/"); ok {
			f.pkg = l.owner(rest)
		}
		for _, imp := range f.imports {
			rest, ok := strings.CutPrefix(imp, module+"/internal/")
			if ok {
				target := l.owner(rest)
				if !f.test && !double && isTestDouble(rest) {
					out = append(out, fmt.Sprintf("%s imports test-only package %s outside a _test.go file", f.rel, imp))
				}
				if f.test || double || target == f.pkg {
					continue
				}
				switch {
				case f.pkg == "cmd/apiary":
					if target != "cli" {
						out = append(out, fmt.Sprintf("forbidden import: cmd/apiary -> %s (%s); main may import only cli", target, f.rel))
					}
				default:
					allow, known := l.allowed[f.pkg]
					if !known {
						out = append(out, fmt.Sprintf("package %s (%s) is not in %s's package table; add it there", f.pkg, f.rel, architecture))
						continue
					}
					if !slices.Contains(allow, "*") && !slices.Contains(allow, target) {
						out = append(out, fmt.Sprintf("forbidden import: %s -> %s (%s); %s says %s may import only %v", f.pkg, target, f.rel, architecture, f.pkg, allow))
					}
				}
				continue
			}
			if f.test || double {
				continue
			}
			for prefix, pkgs := range l.heavy {
				if strings.HasPrefix(imp, prefix) && !slices.Contains(pkgs, f.pkg) {
					out = append(out, fmt.Sprintf("heavy dependency %s imported by %s (%s); %s allows only %v", imp, f.pkg, f.rel, architecture, pkgs))
				}
			}
		}
	}
	return out
}

// TestLayoutTableKnown: every package the table names exists, so the map
// does not drift from the tree.
func TestLayoutTableKnown(t *testing.T) {
	t.Parallel()
	l := readLayout(t)
	for name, imports := range l.allowed {
		if _, err := os.Stat(filepath.Join("internal", name)); err != nil {
			t.Errorf("%s lists package %s, which does not exist", architecture, name)
		}
		for _, imp := range imports {
			if _, ok := l.allowed[imp]; !ok && imp != "*" {
				t.Errorf("%s: %s may import %s, which is not in the table", architecture, name, imp)
			}
		}
	}
}

// isTestDouble reports whether an internal import path names a test-only
// package: a final element ending in "test" (boardtest, envtest).
func isTestDouble(rest string) bool {
	last := rest[strings.LastIndex(rest, "/")+1:]
	return strings.HasSuffix(last, "test")
}

// TestPackageComments requires exactly one package comment per package,
// written in a non-test file.
func TestPackageComments(t *testing.T) {
	t.Parallel()
	docs := map[string][]string{}
	dirs := map[string]bool{}
	for _, f := range loadFiles(t) {
		dir := filepath.Dir(f.rel)
		if f.test && strings.HasSuffix(f.name, "_test") {
			continue
		}
		if dir == "." {
			continue // the module root holds only tests
		}
		dirs[dir] = dirs[dir] || !f.test
		if f.doc && !f.test {
			docs[dir] = append(docs[dir], f.rel)
		}
	}
	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		if !dirs[d] {
			continue
		}
		switch n := len(docs[d]); {
		case n == 0:
			t.Errorf("package %s has no package comment", d)
		case n > 1:
			t.Errorf("package %s has %d package comments (%v); keep one, in doc.go or the main file", d, n, docs[d])
		}
	}
}

// TestNoPackageStateOrInit rejects init functions in shipped code.
func TestNoInit(t *testing.T) {
	t.Parallel()
	for _, f := range loadFiles(t) {
		if f.test {
			continue
		}
		src, err := os.ReadFile(f.rel)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "\nfunc init() {") {
			t.Errorf("%s declares init(); wire dependencies explicitly instead", f.rel)
		}
	}
}

// syntheticMap is an architecture map whose tables the checker is tried on.
const syntheticMap = "# map\n\n## Packages\n\n" +
	"| package | provides | may import (internal) |\n|---|---|---|\n" +
	"| `cli` | wiring | anything |\n" +
	"| `store` | storage | — |\n" +
	"| `runner` | the runtime | `store` |\n" +
	"| `swarm` | swarm mode | `store`, `swarm/policy` |\n" +
	"| `swarm/policy` | decisions | — |\n\n" +
	"  | dependency | only in |\n  |---|---|\n" +
	"  | `example.com/heavy/` | `store` |\n\n" +
	"## Other\n\n| `ignored` | outside the section | `runner` |\n"

// TestImportViolations: fed a synthetic map and import graph, the checker
// names both ends of each forbidden edge and the file, and lets the
// allowed ones pass.
func TestImportViolations(t *testing.T) {
	t.Parallel()
	l, err := parseLayout(syntheticMap)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.allowed["ignored"]; ok || !slices.Equal(l.allowed["runner"], []string{"store"}) || !slices.Equal(l.allowed["store"], []string{}) {
		t.Fatalf("parseLayout = %+v", l)
	}
	in := func(pkg string) string { return module + "/internal/" + pkg }
	file := func(rel string, test bool, imports ...string) goFile {
		return goFile{pkg: pkgOf(rel), rel: rel, test: test, imports: imports}
	}
	for _, tt := range []struct {
		name string
		file goFile
		want []string // substrings of the one message expected; none: allowed
	}{
		{"allowed", file("internal/runner/run.go", false, in("store"), "fmt"), nil},
		{"forbidden", file("internal/runner/run.go", false, in("swarm")), []string{"runner -> swarm", "internal/runner/run.go"}},
		{"forbidden into a subpackage", file("internal/store/x.go", false, in("runner/sub")), []string{"store -> runner", "internal/store/x.go"}},
		{"forbidden from a subpackage", file("internal/store/local/x.go", false, in("swarm")), []string{"store -> swarm", "internal/store/local/x.go"}},
		{"peers", file("internal/swarm/s.go", false, in("runner")), []string{"swarm -> runner"}},
		{"within a package", file("internal/runner/sub/a.go", false, in("runner")), nil},
		{"anything", file("internal/cli/main.go", false, in("runner"), in("swarm")), nil},
		{"tests may import anything", file("internal/store/x_test.go", true, in("runner"), "example.com/heavy/v2"), nil},
		{"main imports only cli", file("cmd/apiary/main.go", false, in("runner")), []string{"cmd/apiary -> runner"}},
		{"main", file("cmd/apiary/main.go", false, in("cli")), nil},
		{"unknown package", file("internal/extra/e.go", false, in("store")), []string{"package extra", "not in"}},
		{"heavy dependency", file("internal/runner/db.go", false, "example.com/heavy/v2"), []string{"example.com/heavy/v2", "runner", "[store]"}},
		{"heavy dependency where allowed", file("internal/store/db.go", false, "example.com/heavy/v2"), nil},
		{"a subpackage's own row", file("internal/swarm/policy/p.go", false, in("store")), []string{"swarm/policy -> store", "internal/swarm/policy/p.go"}},
		{"its subpackages", file("internal/swarm/policy/sub/p.go", false, in("store")), []string{"swarm/policy -> store"}},
		{"into a subpackage with a row", file("internal/runner/r.go", false, in("swarm/policy")), []string{"runner -> swarm/policy"}},
		{"a parent to a subpackage it lists", file("internal/swarm/s.go", false, in("swarm/policy")), nil},
		{"a subpackage to its parent", file("internal/swarm/policy/p.go", false, in("swarm")), []string{"swarm/policy -> swarm"}},
		{"a subpackage without a row is its parent", file("internal/swarm/layout/l.go", false, in("swarm/policy"), in("store")), nil},
		{"heavy dependency in a subpackage", file("internal/store/local/db.go", false, "example.com/heavy/v2"), nil},
		{"test double outside a test", file("internal/runner/run.go", false, in("store/storetest")), []string{"internal/runner/run.go", "store/storetest"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := importViolations(l, []goFile{tt.file})
			if len(tt.want) == 0 {
				if len(got) != 0 {
					t.Fatalf("violations %q, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("violations %q, want one naming %q", got, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("violation %q does not name %q", got[0], w)
				}
			}
		})
	}
}

// TestParseLayoutErrors: a map the checker cannot read is an error, not
// an empty allow-list that lets everything pass.
func TestParseLayoutErrors(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"no section":      "# map\n\n| `a` | x | — |\n",
		"no heavy table":  "## Packages\n\n| `a` | x | — |\n",
		"bad cell":        "## Packages\n\n| `a` | x | b |\n| `h/` | `a` |\n",
		"row of 4 cells":  "## Packages\n\n| `a` | x | — | y |\n| `h/` | `a` |\n",
		"no package rows": "## Packages\n\n| `h/` | `a` |\n",
	} {
		if l, err := parseLayout(src); err == nil {
			t.Errorf("%s: parseLayout = %+v, want an error", name, l)
		}
	}
}
