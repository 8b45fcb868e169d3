package review

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// APIDiff compares the exported Go API of the packages a change touches,
// base against head, from their source (go/ast; no type checking, so it
// needs no dependencies): exported functions, methods of exported types,
// types (struct fields one by one, interfaces whole), constants and
// variables, each rendered as a normalized declaration without parameter
// names. A removed or changed identifier is an api-break (high); an added
// one an api-addition (info). A version bump — the module path's major
// version changing, or a change to one of VersionFiles — is reported as a
// version-bump finding, so a rule can allow breaks that come with one.
// Packages main, testdata, vendor and (unless IncludeInternal) internal
// are not API.
type APIDiff struct {
	IncludeInternal bool
	VersionFiles    []string // e.g. VERSION, CHANGELOG.md
}

// NeedsBase implements NeedsBase.
func (APIDiff) NeedsBase() bool { return true }

// maxAdditions bounds the api-addition findings per package.
const maxAdditions = 50

// apiDecl is one exported identifier's rendered declaration.
type apiDecl struct {
	sig  string
	file string // repository-relative
	line int
}

// Analyse implements Analyser.
func (a APIDiff) Analyse(ctx context.Context, c *Change) ([]Finding, error) {
	if c.BaseDir == "" {
		return nil, fmt.Errorf("%w: API diff needs the base checkout", ErrAnalyser)
	}
	dirs := map[string]bool{}
	var out []Finding
	for _, ch := range c.Changes {
		p := ch.Path
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && a.isAPIDir(path.Dir(p)) {
			dirs[path.Dir(p)] = true
		}
		for _, vf := range a.VersionFiles {
			if p == vf {
				out = append(out, Finding{Kind: KindVersionBump, Severity: SevInfo, File: p, Evidence: "version file " + p + " changed"})
			}
		}
	}
	if bm, hm := modulePath(c.BaseDir), modulePath(c.HeadDir); bm != hm && bm != "" && hm != "" {
		out = append(out, Finding{Kind: KindVersionBump, Severity: SevInfo, File: "go.mod",
			Evidence: fmt.Sprintf("module path changed from %s to %s", bm, hm)})
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		base, err := packageAPI(c.BaseDir, d)
		if err != nil {
			return nil, err
		}
		head, err := packageAPI(c.HeadDir, d)
		if err != nil {
			return nil, err
		}
		out = append(out, diffAPI(d, base, head)...)
	}
	return out, nil
}

// isAPIDir reports whether a package directory can hold public API.
func (a APIDiff) isAPIDir(dir string) bool {
	for _, part := range strings.Split(dir, "/") {
		if part == "testdata" || part == "vendor" || strings.HasPrefix(part, "_") ||
			(strings.HasPrefix(part, ".") && part != ".") || (part == "internal" && !a.IncludeInternal) {
			return false
		}
	}
	return true
}

// diffAPI compares one package's API at base and head.
func diffAPI(dir string, base, head map[string]apiDecl) []Finding {
	pkg := dir
	if pkg == "." {
		pkg = "the root package"
	}
	if len(head) == 0 && len(base) > 0 {
		return []Finding{{Kind: KindAPIBreak, Severity: SevHigh, File: dirOrEmpty(dir),
			Evidence: fmt.Sprintf("package %s removed or emptied: its %d exported identifiers are gone", pkg, len(base))}}
	}
	keys := make([]string, 0, len(base)+len(head))
	for k := range base {
		keys = append(keys, k)
	}
	for k := range head {
		if _, ok := base[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []Finding
	added := 0
	for _, k := range keys {
		b, inBase := base[k]
		h, inHead := head[k]
		switch {
		case inBase && !inHead:
			out = append(out, Finding{Kind: KindAPIBreak, Severity: SevHigh, File: b.file, Line: b.line,
				Evidence: fmt.Sprintf("removed %s.%s (was: %s)", pkg, k, b.sig)})
		case !inBase && inHead:
			if added++; added <= maxAdditions {
				out = append(out, Finding{Kind: KindAPIAddition, Severity: SevInfo, File: h.file, Line: h.line,
					Evidence: fmt.Sprintf("added %s.%s: %s", pkg, k, h.sig)})
			}
		case b.sig != h.sig:
			out = append(out, Finding{Kind: KindAPIBreak, Severity: SevHigh, File: h.file, Line: h.line,
				Evidence: fmt.Sprintf("changed %s.%s: %s → %s", pkg, k, b.sig, h.sig)})
		}
	}
	if added > maxAdditions {
		out = append(out, Finding{Kind: KindAPIAddition, Severity: SevInfo, File: dirOrEmpty(dir),
			Evidence: fmt.Sprintf("%d more exported identifiers added to %s", added-maxAdditions, pkg)})
	}
	return out
}

var ignoreBuild = regexp.MustCompile(`(?m)^//go:build\s+ignore\s*$`)

// packageAPI returns the exported API of the Go package in root/dir (empty
// for a missing directory or package main).
func packageAPI(root, dir string) (map[string]apiDecl, error) {
	api := map[string]apiDecl{}
	full := filepath.Join(root, filepath.FromSlash(dir))
	entries, err := os.ReadDir(full)
	if os.IsNotExist(err) {
		return api, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAnalyser, err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(full, n))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrAnalyser, err)
		}
		if ignoreBuild.Match(src) {
			continue
		}
		f, err := parser.ParseFile(fset, n, src, parser.SkipObjectResolution)
		if err != nil {
			// Syntax errors are the test analyser's business; a file
			// that does not parse contributes nothing.
			continue
		}
		if f.Name.Name == "main" {
			return map[string]apiDecl{}, nil
		}
		collectAPI(fset, f, joinRel(dir, n), api)
	}
	return api, nil
}

// collectAPI adds f's exported declarations to api.
func collectAPI(fset *token.FileSet, f *ast.File, file string, api map[string]apiDecl) {
	at := func(pos token.Pos) apiDecl { return apiDecl{file: file, line: fset.Position(pos).Line} }
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			ad := at(d.Pos())
			if d.Recv == nil {
				ad.sig = "func " + d.Name.Name + typeParams(fset, d.Type.TypeParams) + render(fset, bareFunc(d.Type))[len("func"):]
				api[d.Name.Name] = ad
				continue
			}
			recv, ptr := recvName(d.Recv)
			if !ast.IsExported(recv) {
				continue
			}
			r := recv
			if ptr {
				r = "*" + recv
			}
			ad.sig = "func (" + r + ") " + d.Name.Name + render(fset, bareFunc(d.Type))[len("func"):]
			api[recv+"."+d.Name.Name] = ad
		case *ast.GenDecl:
			collectGen(fset, d, at, api)
		}
	}
}

// collectGen adds a type, const or var declaration group.
func collectGen(fset *token.FileSet, d *ast.GenDecl, at func(token.Pos) apiDecl, api map[string]apiDecl) {
	var lastType string // const groups inherit the previous spec's type
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			ad := at(s.Pos())
			name, tp := s.Name.Name, typeParams(fset, s.TypeParams)
			switch t := s.Type.(type) {
			case *ast.StructType:
				ad.sig = "type " + name + tp + " struct"
				for _, fld := range t.Fields.List {
					ft := render(fset, bareExpr(fld.Type))
					names := fld.Names
					if len(names) == 0 { // embedded
						names = []*ast.Ident{{Name: embeddedName(fld.Type), NamePos: fld.Pos()}}
					}
					for _, id := range names {
						if ast.IsExported(id.Name) {
							fd := at(id.Pos())
							fd.sig = "field " + name + "." + id.Name + " " + ft
							api[name+"."+id.Name] = fd
						}
					}
				}
			default:
				eq := " "
				if s.Assign.IsValid() {
					eq = " = "
				}
				ad.sig = "type " + name + tp + eq + render(fset, bareExpr(s.Type))
			}
			api[name] = ad
		case *ast.ValueSpec:
			kind := "var"
			if d.Tok == token.CONST {
				kind = "const"
			}
			typ := ""
			switch {
			case s.Type != nil:
				typ = " " + render(fset, bareExpr(s.Type))
			case d.Tok == token.CONST && len(s.Values) == 0:
				typ = lastType
			}
			if d.Tok == token.CONST && (s.Type != nil || len(s.Values) > 0) {
				lastType = typ
			}
			for _, id := range s.Names {
				if id.IsExported() {
					ad := at(id.Pos())
					ad.sig = kind + " " + id.Name + typ
					api[id.Name] = ad
				}
			}
		}
	}
}

// recvName returns a receiver's base type name and whether it is a pointer.
func recvName(fl *ast.FieldList) (string, bool) {
	if fl == nil || len(fl.List) == 0 {
		return "", false
	}
	t := fl.List[0].Type
	ptr := false
	if st, ok := t.(*ast.StarExpr); ok {
		t, ptr = st.X, true
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name, ptr
	}
	return "", ptr
}

// embeddedName is the field name of an embedded type.
func embeddedName(t ast.Expr) string {
	switch x := t.(type) {
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.IndexExpr:
		return embeddedName(x.X)
	case *ast.IndexListExpr:
		return embeddedName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// typeParams renders a type parameter list without names ("[any, comparable]").
func typeParams(fset *token.FileSet, fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	var parts []string
	for _, f := range fl.List {
		c := render(fset, bareExpr(f.Type))
		for range max(1, len(f.Names)) {
			parts = append(parts, c)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// bareFunc returns a copy of ft without parameter and result names and
// without type parameters (rendered separately), so renaming a parameter
// is not a change.
func bareFunc(ft *ast.FuncType) *ast.FuncType {
	return &ast.FuncType{Params: bareFields(ft.Params), Results: bareFields(ft.Results)}
}

func bareFields(fl *ast.FieldList) *ast.FieldList {
	if fl == nil {
		return nil
	}
	out := &ast.FieldList{}
	for _, f := range fl.List {
		for range max(1, len(f.Names)) {
			out.List = append(out.List, &ast.Field{Type: bareExpr(f.Type)})
		}
	}
	return out
}

// bareExpr strips names from the function types inside a type expression
// and sorts interface methods, so equivalent declarations render equally.
func bareExpr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.FuncType:
		return bareFunc(x)
	case *ast.StarExpr:
		return &ast.StarExpr{X: bareExpr(x.X)}
	case *ast.ArrayType:
		return &ast.ArrayType{Len: x.Len, Elt: bareExpr(x.Elt)}
	case *ast.MapType:
		return &ast.MapType{Key: bareExpr(x.Key), Value: bareExpr(x.Value)}
	case *ast.ChanType:
		return &ast.ChanType{Dir: x.Dir, Value: bareExpr(x.Value)}
	case *ast.StructType:
		fl := &ast.FieldList{}
		for _, f := range x.Fields.List {
			fl.List = append(fl.List, &ast.Field{Names: f.Names, Type: bareExpr(f.Type), Tag: f.Tag})
		}
		return &ast.StructType{Fields: fl}
	case *ast.InterfaceType:
		var ms []*ast.Field
		for _, f := range x.Methods.List {
			if ft, ok := f.Type.(*ast.FuncType); ok {
				ms = append(ms, &ast.Field{Names: f.Names, Type: bareFunc(ft)})
			} else {
				ms = append(ms, &ast.Field{Type: bareExpr(f.Type)})
			}
		}
		sort.SliceStable(ms, func(i, j int) bool { return fieldKey(ms[i]) < fieldKey(ms[j]) })
		return &ast.InterfaceType{Methods: &ast.FieldList{List: ms}}
	}
	return e
}

func fieldKey(f *ast.Field) string {
	if len(f.Names) > 0 {
		return f.Names[0].Name
	}
	return "~" + render(token.NewFileSet(), f.Type)
}

// render prints a node on one line with single spaces.
func render(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(&b, fset, n); err != nil {
		return fmt.Sprintf("<%T>", n)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
