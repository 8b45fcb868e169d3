package gate

import (
	"go/ast"
	"go/token"
)

// model counts the assertion checks of one side's functions.
type model struct {
	side *goSide
	memo map[string]int  // helper → live checks of one call
	busy map[string]bool // helpers being counted (recursion guard)
	lits map[*ast.FuncLit]bool
}

func newModel(s *goSide) *model {
	return &model{side: s, memo: map[string]int{}, busy: map[string]bool{}, lits: map[*ast.FuncLit]bool{}}
}

// count is what a walk found: checks that run and checks that cannot.
type count struct{ live, dead int }

func (c *count) add(o count) { c.live += o.live; c.dead += o.dead }

// site is one assertion call met by a walk, with how often it runs.
type site struct {
	call   *ast.CallExpr
	weight int
	live   bool
}

// construct is one way a test function skips its own assertions (see
// bypass.go for the list).
type construct struct {
	kind  string
	line  int
	src   string // the construct, on one line
	after int    // the assertion checks it keeps from running
}

// frame is one enclosing block of the statement being walked.
type frame struct {
	stmts []ast.Stmt
	i     int
	loop  bool // the block is a loop's body
	sc    *scope
}

// visitor collects sites and constructs along a walk; a nil visitor only
// counts.
type visitor struct {
	sites      []site
	constructs []construct
	frames     []frame
}

// funcChecks counts the checks of a top-level function's body.
func (m *model) funcChecks(fd *ast.FuncDecl, v *visitor) count {
	if fd.Body == nil {
		return count{}
	}
	sc := newScope(nil, fd.Type, fd.Body)
	c, _ := m.block(sc, fd.Body.List, 1, true, false, v)
	return c
}

// helperChecks is how many checks one call of helper name runs: a
// non-test function of the side that takes a testing value; -1 if name is
// not one.
func (m *model) helperChecks(name string) int {
	f := m.side.funcs[name]
	if f == nil || isTestEntry(name) || !takesTesting(f.decl.Type) {
		return -1
	}
	if n, ok := m.memo[name]; ok {
		return n
	}
	if m.busy[name] {
		return 0
	}
	m.busy[name] = true
	n := m.funcChecks(f.decl, nil).live
	delete(m.busy, name)
	m.memo[name] = n
	return n
}

// litChecks counts a function literal that runs w times.
func (m *model) litChecks(sc *scope, fl *ast.FuncLit, w int, live bool, v *visitor) count {
	if m.lits[fl] {
		return count{} // a closure that calls itself
	}
	m.lits[fl] = true
	defer delete(m.lits, fl)
	inner := newScope(sc, fl.Type, fl.Body)
	var saved []frame
	if v != nil {
		saved, v.frames = v.frames, nil // an early return in a closure ends the closure only
		defer func() { v.frames = saved }()
	}
	c, _ := m.block(inner, fl.Body.List, w, live, false, v)
	return c
}

// block walks statements that run w times; live is false in code that
// cannot run. It reports whether the block ends the flow (a return, a
// branch, a call that ends the test).
func (m *model) block(sc *scope, stmts []ast.Stmt, w int, live, loop bool, v *visitor) (count, bool) {
	var c count
	if v != nil {
		v.frames = append(v.frames, frame{stmts: stmts, loop: loop, sc: sc})
		defer func() { v.frames = v.frames[:len(v.frames)-1] }()
	}
	ended := false
	for i, s := range stmts {
		if v != nil {
			v.frames[len(v.frames)-1].i = i
		}
		if ended && live {
			live = false
		}
		sc2, term := m.stmt(sc, s, w, live, v)
		c.add(sc2)
		if term && !ended {
			if v != nil && live && i+1 < len(stmts) {
				var rest count
				for _, r := range stmts[i+1:] {
					rc, _ := m.stmt(sc, r, w, true, nil)
					rest.add(rc)
				}
				if rest.live > 0 {
					v.report(m, s, rest.live)
				}
			}
			ended = true
		}
	}
	return c, ended
}

// report records the construct that ends a block before its assertions.
func (v *visitor) report(m *model, s ast.Stmt, after int) {
	kind := "unconditional early return"
	switch s := s.(type) {
	case *ast.ExprStmt:
		if _, ok := s.X.(*ast.CallExpr); ok {
			kind = "assertions after a call that ends the test"
		}
	case *ast.IfStmt:
		return // reported by the if itself
	case *ast.BlockStmt, *ast.LabeledStmt, *ast.SwitchStmt, *ast.SelectStmt, *ast.ForStmt, *ast.RangeStmt:
		return // the construct inside it is reported
	}
	v.constructs = append(v.constructs, construct{kind: kind, line: m.side.line(s.Pos()), src: m.side.source(s), after: after})
}

// exitOf returns the statement that leaves an if's body early: a return,
// a branch, or nothing.
func exitOf(b *ast.BlockStmt) ast.Stmt {
	if b == nil {
		return nil
	}
	for _, s := range b.List {
		switch s := s.(type) {
		case *ast.ReturnStmt:
			return s
		case *ast.BranchStmt:
			if s.Tok != token.FALLTHROUGH {
				return s
			}
		}
	}
	return nil
}

// afterExit counts the checks an exit at the current position keeps from
// running: the rest of each enclosing block, up to the function's body for
// a return, up to the loop's body for continue and break.
func (m *model) afterExit(v *visitor, exit ast.Stmt) int {
	n := 0
	bs, isBranch := exit.(*ast.BranchStmt)
	for k := len(v.frames) - 1; k >= 0; k-- {
		f := v.frames[k]
		for _, r := range f.stmts[f.i+1:] {
			rc, _ := m.stmt(f.sc, r, 1, true, nil)
			n += rc.live
		}
		if isBranch && bs.Tok != token.GOTO && f.loop {
			break
		}
	}
	return n
}

// stmt walks one statement.
func (m *model) stmt(sc *scope, s ast.Stmt, w int, live bool, v *visitor) (count, bool) {
	var c count
	switch s := s.(type) {
	case *ast.ExprStmt:
		c = m.expr(sc, s.X, w, live, v)
		if call, ok := s.X.(*ast.CallExpr); ok && sc.terminates(call) {
			return c, true
		}
	case *ast.ReturnStmt:
		for _, r := range s.Results {
			c.add(m.expr(sc, r, w, live, v))
		}
		return c, true
	case *ast.BranchStmt:
		return c, s.Tok != token.FALLTHROUGH
	case *ast.BlockStmt:
		return m.block(sc, s.List, w, live, false, v)
	case *ast.LabeledStmt:
		return m.stmt(sc, s.Stmt, w, live, v)
	case *ast.IfStmt:
		return m.ifStmt(sc, s, w, live, v)
	case *ast.ForStmt:
		if s.Init != nil {
			rc, _ := m.stmt(sc, s.Init, w, live, v)
			c.add(rc)
		}
		if s.Cond != nil {
			c.add(m.expr(sc, s.Cond, w, live, v))
		}
		bw := mulWeight(w, forWeight(s))
		dead := s.Cond != nil && constTruth(s.Cond) == never
		c.add(m.loopBody(sc, s, s.Body, bw, live, dead, v))
	case *ast.RangeStmt:
		c.add(m.expr(sc, s.X, w, live, v))
		rw := m.rangeWeight(sc, s.X)
		c.add(m.loopBody(sc, s, s.Body, mulWeight(w, max(rw, 1)), live, rw == 0, v))
	case *ast.SwitchStmt:
		if s.Init != nil {
			rc, _ := m.stmt(sc, s.Init, w, live, v)
			c.add(rc)
		}
		if s.Tag != nil {
			c.add(m.expr(sc, s.Tag, w, live, v))
		}
		c.add(m.clauses(sc, s.Body, w, live, v))
	case *ast.TypeSwitchStmt:
		c.add(m.clauses(sc, s.Body, w, live, v))
	case *ast.SelectStmt:
		c.add(m.clauses(sc, s.Body, w, live, v))
	case *ast.AssignStmt:
		for _, r := range s.Rhs {
			if _, ok := r.(*ast.FuncLit); ok {
				continue // counted where it is called
			}
			c.add(m.expr(sc, r, w, live, v))
		}
	case *ast.DeclStmt:
		if gd, ok := s.Decl.(*ast.GenDecl); ok {
			for _, sp := range gd.Specs {
				if vs, ok := sp.(*ast.ValueSpec); ok {
					for _, val := range vs.Values {
						if _, ok := val.(*ast.FuncLit); !ok {
							c.add(m.expr(sc, val, w, live, v))
						}
					}
				}
			}
		}
	case *ast.GoStmt:
		c = m.expr(sc, s.Call, w, live, v)
	case *ast.DeferStmt:
		c = m.expr(sc, s.Call, w, live, v)
	case *ast.SendStmt:
		c = m.expr(sc, s.Value, w, live, v)
	}
	return c, false
}

// loopBody walks a loop's body; dead loops never run it.
func (m *model) loopBody(sc *scope, loop ast.Stmt, body *ast.BlockStmt, w int, live, dead bool, v *visitor) count {
	c, _ := m.block(sc, body.List, w, live && !dead, true, v)
	if dead && live && v != nil && c.dead > 0 {
		v.constructs = append(v.constructs, construct{kind: "assertions in a loop that never runs", line: m.side.line(loop.Pos()),
			src: m.side.source(header(loop)), after: c.dead})
	}
	return c
}

// header is a loop or if without its body, for messages.
func header(s ast.Stmt) ast.Node {
	switch s := s.(type) {
	case *ast.ForStmt:
		return &ast.ForStmt{For: s.For, Init: s.Init, Cond: s.Cond, Post: s.Post, Body: &ast.BlockStmt{}}
	case *ast.RangeStmt:
		return &ast.RangeStmt{For: s.For, Key: s.Key, Value: s.Value, Tok: s.Tok, Range: s.Range, X: s.X, Body: &ast.BlockStmt{}}
	case *ast.IfStmt:
		return &ast.IfStmt{If: s.If, Init: s.Init, Cond: s.Cond, Body: &ast.BlockStmt{}}
	}
	return s
}

func (m *model) clauses(sc *scope, body *ast.BlockStmt, w int, live bool, v *visitor) count {
	var c count
	for _, cl := range body.List {
		switch cl := cl.(type) {
		case *ast.CaseClause:
			for _, e := range cl.List {
				c.add(m.expr(sc, e, w, live, v))
			}
			rc, _ := m.block(sc, cl.Body, w, live, false, v)
			c.add(rc)
		case *ast.CommClause:
			rc, _ := m.block(sc, cl.Body, w, live, false, v)
			c.add(rc)
		}
	}
	return c
}

// ifStmt walks an if: a constant condition makes one branch dead; an early
// exit under a constant or environment condition, before assertions, is a
// construct.
func (m *model) ifStmt(sc *scope, s *ast.IfStmt, w int, live bool, v *visitor) (count, bool) {
	var c count
	if s.Init != nil {
		rc, _ := m.stmt(sc, s.Init, w, live, v)
		c.add(rc)
	}
	c.add(m.expr(sc, s.Cond, w, live, v))
	t := constTruth(s.Cond)
	if v != nil && live {
		for _, br := range []struct {
			body  *ast.BlockStmt
			taken truth // the condition value that takes this branch
		}{{s.Body, always}, {elseBlock(s), never}} {
			exit := exitOf(br.body)
			if exit == nil {
				continue
			}
			kind := ""
			switch {
			case t == br.taken:
				kind = "early return under a constant condition"
			case t == unknown && sc.envExpr(s.Cond):
				kind = "early return conditioned on the environment"
			}
			if kind == "" {
				continue
			}
			if n := m.afterExit(v, exit); n > 0 {
				v.constructs = append(v.constructs, construct{kind: kind, line: m.side.line(s.Pos()),
					src: m.side.source(&ast.IfStmt{If: s.If, Init: s.Init, Cond: s.Cond, Body: &ast.BlockStmt{List: []ast.Stmt{exit}}}), after: n})
			}
		}
	}
	bc, bterm := m.block(sc, s.Body.List, w, live && t != never, false, v)
	if t == never && live && v != nil && bc.dead > 0 {
		v.constructs = append(v.constructs, construct{kind: "assertions in a branch that never runs", line: m.side.line(s.Pos()),
			src: m.side.source(header(s)), after: bc.dead})
	}
	c.add(bc)
	eterm := false
	if s.Else != nil {
		var ec count
		ec, eterm = m.stmt(sc, s.Else, w, live && t != always, v)
		if t == always && live && v != nil && ec.dead > 0 {
			v.constructs = append(v.constructs, construct{kind: "assertions in a branch that never runs", line: m.side.line(s.Else.Pos()),
				src: "else of " + m.side.source(header(s)), after: ec.dead})
		}
		c.add(ec)
	}
	switch t {
	case always:
		return c, bterm
	case never:
		return c, eterm
	}
	return c, bterm && eterm && s.Else != nil
}

func elseBlock(s *ast.IfStmt) *ast.BlockStmt {
	b, _ := s.Else.(*ast.BlockStmt)
	return b
}

// expr counts the checks of the calls in an expression.
func (m *model) expr(sc *scope, e ast.Expr, w int, live bool, v *visitor) count {
	var c count
	if e == nil {
		return c
	}
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			// A literal that is neither called nor passed is counted where
			// it is used; here it is an argument of some call: it runs.
			c.add(m.litChecks(sc, n, w, live, v))
			return false
		case *ast.CallExpr:
			c.add(m.call(sc, n, w, live, v))
			if fl, ok := n.Fun.(*ast.FuncLit); ok {
				c.add(m.litChecks(sc, fl, w, live, v))
				for _, a := range n.Args {
					c.add(m.expr(sc, a, w, live, v))
				}
				return false
			}
		}
		return true
	})
	return c
}

// call counts one call itself (not its arguments, which expr visits).
func (m *model) call(sc *scope, call *ast.CallExpr, w int, live bool, v *visitor) count {
	var c count
	add := func(n int) {
		if live {
			c.live += n
		} else {
			c.dead += n
		}
	}
	switch sc.classify(call) {
	case callAssert:
		add(w)
		if v != nil {
			v.sites = append(v.sites, site{call: call, weight: w, live: live})
		}
		return c
	case callSkip:
		if v != nil && live {
			v.constructs = append(v.constructs, construct{kind: "skip path", line: m.side.line(call.Pos()), src: m.side.source(m.skipContext(v, call))})
		}
		return c
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		if fl, fsc := sc.closure(fn.Name); fl != nil {
			c.add(m.litChecks(fsc, fl, w, live, v))
			return c
		}
		if n := m.helperChecks(fn.Name); n >= 0 {
			add(mulWeight(w, n))
			return c
		}
	case *ast.SelectorExpr:
		// t.Run("name", check) with a closure variable, f.Fuzz(check).
		if id, ok := fn.X.(*ast.Ident); ok && sc.isTesting(id.Name) {
			for _, a := range call.Args {
				if aid, ok := a.(*ast.Ident); ok {
					if fl, fsc := sc.closure(aid.Name); fl != nil {
						c.add(m.litChecks(fsc, fl, w, live, v))
					} else if n := m.helperChecks(aid.Name); n >= 0 {
						add(mulWeight(w, n))
					}
				}
			}
			return c
		}
	}
	// A function the model cannot see that is handed a testing value is
	// taken for one check (a helper in a file the change does not touch).
	for _, a := range call.Args {
		if id, ok := a.(*ast.Ident); ok && sc.isTesting(id.Name) {
			add(w)
			if v != nil {
				v.sites = append(v.sites, site{call: call, weight: w, live: live})
			}
			break
		}
	}
	return c
}

// skipContext is the if statement that guards a skip, or the skip itself.
func (m *model) skipContext(v *visitor, call *ast.CallExpr) ast.Node {
	for k := len(v.frames) - 1; k >= 0; k-- {
		f := v.frames[k]
		if f.i < len(f.stmts) {
			if is, ok := f.stmts[f.i].(*ast.IfStmt); ok && is.Pos() <= call.Pos() && call.End() <= is.Body.End() {
				return &ast.IfStmt{If: is.If, Init: is.Init, Cond: is.Cond, Body: &ast.BlockStmt{List: []ast.Stmt{&ast.ExprStmt{X: call}}}}
			}
		}
	}
	return call
}

// uncalled reports the closures of a function that hold assertions but
// are never called or passed on: their assertions never run.
func (m *model) uncalled(fd *ast.FuncDecl, v *visitor) {
	var walk func(parent *scope, ft *ast.FuncType, body *ast.BlockStmt)
	walk = func(parent *scope, ft *ast.FuncType, body *ast.BlockStmt) {
		sc := newScope(parent, ft, body)
		for name, fl := range sc.closures {
			if sc.calls[name] > 0 {
				continue
			}
			if n := m.litChecks(sc, fl, 1, true, nil).live; n > 0 {
				v.constructs = append(v.constructs, construct{kind: "assertions in a closure that is never called", line: m.side.line(fl.Pos()),
					src: name + " := " + clip(m.side.source(fl.Type)) + " {…}", after: n})
			}
		}
		ast.Inspect(body, func(n ast.Node) bool {
			if fl, ok := n.(*ast.FuncLit); ok {
				walk(sc, fl.Type, fl.Body)
				return false
			}
			return true
		})
	}
	if fd.Body != nil {
		walk(nil, fd.Type, fd.Body)
	}
}
