package apiary_test

import (
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
// top-level package under internal/, the internal packages it may import
// ("*" for anything), and for each heavy dependency (a module path
// prefix), the only packages that may import it.
type layout struct {
	allowed map[string][]string
	heavy   map[string][]string
}

// readLayout parses the tables of the map's "Packages" section: rows of
// three cells are packages (name, what it provides, what it may import),
// rows of two are heavy dependencies (prefix, the packages allowed).
func readLayout(t *testing.T) layout {
	t.Helper()
	b, err := os.ReadFile(architecture)
	if err != nil {
		t.Fatal(err)
	}
	l := layout{allowed: map[string][]string{}, heavy: map[string][]string{}}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
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
		switch len(cells) {
		case 3:
			l.allowed[name] = codeNames(t, cells[2])
		case 2:
			l.heavy[name] = codeNames(t, cells[1])
		default:
			t.Fatalf("%s: a table row of %d cells: %s", architecture, len(cells), line)
		}
	}
	if len(l.allowed) == 0 || len(l.heavy) == 0 {
		t.Fatalf("%s: no package table or no heavy-dependency table in its Packages section", architecture)
	}
	return l
}

// codeNames reads a cell listing `names`: "anything" is "*", "—" is none.
func codeNames(t *testing.T, cell string) []string {
	cell = strings.TrimSpace(cell)
	switch cell {
	case "anything":
		return []string{"*"}
	case "—", "-", "":
		return []string{}
	}
	var out []string
	for _, part := range strings.Split(cell, ",") {
		part = strings.TrimSpace(part)
		if len(part) < 3 || part[0] != '`' || part[len(part)-1] != '`' {
			t.Fatalf("%s: %q is not a `name` in cell %q", architecture, part, cell)
		}
		out = append(out, part[1:len(part)-1])
	}
	return out
}

type goFile struct {
	pkg     string // top-level package under internal/ ("board"), or "cmd/apiary"
	rel     string // path relative to the module root
	test    bool
	imports []string
	doc     bool // has a package comment
	name    string
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
		dir := filepath.ToSlash(filepath.Dir(path))
		if rest, ok := strings.CutPrefix(dir, "internal/"); ok {
			gf.pkg, _, _ = strings.Cut(rest, "/")
		} else {
			gf.pkg = dir
		}
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
	l := readLayout(t)
	for _, f := range loadFiles(t) {
		double := isTestDouble(strings.TrimPrefix(filepath.ToSlash(filepath.Dir(f.rel)), "internal/"))
		for _, imp := range f.imports {
			rest, ok := strings.CutPrefix(imp, module+"/internal/")
			if ok {
				target, _, _ := strings.Cut(rest, "/")
				if !f.test && !double && isTestDouble(rest) {
					t.Errorf("%s imports test-only package %s outside a _test.go file", f.rel, imp)
				}
				if f.test || double || target == f.pkg {
					continue
				}
				switch {
				case f.pkg == "cmd/apiary":
					if target != "cli" {
						t.Errorf("forbidden import: cmd/apiary -> %s (%s); main may import only cli", target, f.rel)
					}
				default:
					allow, known := l.allowed[f.pkg]
					if !known {
						t.Errorf("package %s (%s) is not in %s's package table; add it there", f.pkg, f.rel, architecture)
						continue
					}
					if !slices.Contains(allow, "*") && !slices.Contains(allow, target) {
						t.Errorf("forbidden import: %s -> %s (%s); %s says %s may import only %v", f.pkg, target, f.rel, architecture, f.pkg, allow)
					}
				}
				continue
			}
			if f.test || double {
				continue
			}
			for prefix, pkgs := range l.heavy {
				if strings.HasPrefix(imp, prefix) && !slices.Contains(pkgs, f.pkg) {
					t.Errorf("heavy dependency %s imported by %s (%s); %s allows only %v", imp, f.pkg, f.rel, architecture, pkgs)
				}
			}
		}
	}
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
