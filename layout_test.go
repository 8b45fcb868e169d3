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

// allowed is DESIGN.md's import allow-list: for each package under internal/,
// the internal packages it may import. A subpackage (board/local) belongs to
// its top-level package and may import it. cli may import anything.
var allowed = map[string][]string{
	"cli":        {"*"},
	"config":     {},
	"sse":        {},
	"llmapi":     {"sse"},
	"sched":      {},
	"gateway":    {"sched", "llmapi", "sse", "capability"},
	"llmfake":    {"llmapi", "sse"},
	"durable":    {"capability"},
	"mcpserver":  {"durable", "envelope", "capability"},
	"envelope":   {"capability"},
	"capability": {},
	"plan":       {"envelope"},
	"git":        {},
	"gate":       {"git", "envelope"},
	"agent":      {"envelope"},
	"supervise":  {"sched"},
	"board":      {"envelope"},
	"swarm":      {"plan", "git", "gate", "agent", "supervise", "board", "envelope", "capability"},
	"sim":        {"sched", "plan", "plot"},
	"eval":       {"swarm", "plan", "plot"},
	"dashboard":  {"plot"},
	"telemetry":  {},
	// bench holds the gateway benchmarks' engines (cli keeps their flags).
	"bench": {"gateway", "llmapi", "llmfake", "sched"},
	// plot draws the charts of reports (SVG and PNG) for sim, eval and the
	// dashboard; it stands alone.
	"plot": {},
	// envtest is a test-only helper (finding installed components); it ships
	// nowhere and is imported only from _test.go files.
	"envtest": {},
}

// heavy dependencies and the only internal packages that may import them.
var heavy = map[string][]string{
	"go.etcd.io/etcd/":                       {"board"},
	"github.com/modelcontextprotocol/go-sdk": {"mcpserver"},
	"modernc.org/sqlite":                     {"board", "gateway"},
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

// TestImportAllowList enforces DESIGN.md's package dependency table.
func TestImportAllowList(t *testing.T) {
	t.Parallel()
	for _, f := range loadFiles(t) {
		for _, imp := range f.imports {
			rest, ok := strings.CutPrefix(imp, module+"/internal/")
			if ok {
				target, _, _ := strings.Cut(rest, "/")
				if !f.test && isTestDouble(rest) {
					t.Errorf("%s imports test-only package %s outside a _test.go file", f.rel, imp)
				}
				if f.test || target == f.pkg {
					continue
				}
				switch {
				case f.pkg == "cmd/apiary":
					if target != "cli" {
						t.Errorf("forbidden import: cmd/apiary -> %s (%s); main may import only cli", target, f.rel)
					}
				default:
					allow, known := allowed[f.pkg]
					if !known {
						t.Errorf("package %s (%s) is not in DESIGN.md's table; add it there and to this test", f.pkg, f.rel)
						continue
					}
					if !slices.Contains(allow, "*") && !slices.Contains(allow, target) {
						t.Errorf("forbidden import: %s -> %s (%s); %s may import only %v", f.pkg, target, f.rel, f.pkg, allow)
					}
				}
				continue
			}
			if f.test {
				continue
			}
			for prefix, pkgs := range heavy {
				if strings.HasPrefix(imp, prefix) && !slices.Contains(pkgs, f.pkg) {
					t.Errorf("heavy dependency %s imported by %s (%s); only %v may import it", imp, f.pkg, f.rel, pkgs)
				}
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
