// Package calc is a small calculator language (see doc.go); this file
// is its parser.
package calc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by the errors of Parse.
var ErrSyntax = errors.New("calc: syntax error")

// Expr is an expression tree. String prints it fully parenthesized.
type Expr interface {
	String() string
}

// The nodes of an expression tree.
type (
	// Num is a number.
	Num struct{ Value float64 }
	// Var is a variable.
	Var struct{ Name string }
	// Neg is -X.
	Neg struct{ X Expr }
	// Binary is X Op Y, Op one of + - * / ^.
	Binary struct {
		Op   byte
		X, Y Expr
	}
	// Call is Func(Args...).
	Call struct {
		Func string
		Args []Expr
	}
)

func (n Num) String() string { return strconv.FormatFloat(n.Value, 'g', -1, 64) }
func (v Var) String() string { return v.Name }
func (n Neg) String() string { return "(-" + n.X.String() + ")" }
func (b Binary) String() string {
	return "(" + b.X.String() + " " + string(b.Op) + " " + b.Y.String() + ")"
}
func (c Call) String() string {
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = a.String()
	}
	return c.Func + "(" + strings.Join(args, ", ") + ")"
}

// Parse parses src as one expression (see the package documentation for
// the grammar). Errors wrap ErrSyntax, or ErrLex for a bad character.
func Parse(src string) (Expr, error) {
	toks, err := Lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.Kind != EOF {
		return nil, p.errorf(t, "unexpected %q", t.Text)
	}
	return e, nil
}

type parser struct {
	toks []Token
	i    int
}

func (p *parser) peek() Token { return p.toks[p.i] }

func (p *parser) next() Token {
	t := p.toks[p.i]
	if t.Kind != EOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(ops string) bool {
	t := p.peek()
	return t.Kind == Op && strings.Contains(ops, t.Text)
}

func (p *parser) errorf(t Token, format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, t.Pos, fmt.Sprintf(format, args...))
}

// expr := term (("+" | "-") term)*
func (p *parser) expr() (Expr, error) {
	x, err := p.term()
	for err == nil && p.isOp("+-") {
		op := p.next().Text[0]
		var y Expr
		if y, err = p.term(); err == nil {
			x = Binary{op, x, y}
		}
	}
	return x, err
}

// term := unary (("*" | "/") unary)*
func (p *parser) term() (Expr, error) {
	x, err := p.unary()
	for err == nil && p.isOp("*/") {
		op := p.next().Text[0]
		var y Expr
		if y, err = p.unary(); err == nil {
			x = Binary{op, x, y}
		}
	}
	return x, err
}

// unary := "-" unary | power
func (p *parser) unary() (Expr, error) {
	if p.isOp("-") {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return Neg{x}, nil
	}
	return p.power()
}

// power := primary ("^" unary)?   (right to left: the exponent is a unary)
func (p *parser) power() (Expr, error) {
	x, err := p.primary()
	if err != nil || !p.isOp("^") {
		return x, err
	}
	p.next()
	y, err := p.unary()
	if err != nil {
		return nil, err
	}
	return Binary{'^', x, y}, nil
}

// primary := Number | Ident | Ident "(" args ")" | "(" expr ")"
func (p *parser) primary() (Expr, error) {
	t := p.next()
	switch {
	case t.Kind == Number:
		v, err := strconv.ParseFloat(t.Text, 64)
		if err != nil {
			return nil, p.errorf(t, "bad number %q", t.Text)
		}
		return Num{v}, nil
	case t.Kind == Ident && p.isOp("("):
		p.next()
		c := Call{Func: t.Text}
		for {
			a, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.Args = append(c.Args, a)
			if !p.isOp(",") {
				break
			}
			p.next()
		}
		if !p.isOp(")") {
			return nil, p.errorf(p.peek(), "want ) to close the call of %s", t.Text)
		}
		p.next()
		return c, nil
	case t.Kind == Ident:
		return Var{t.Text}, nil
	case t.Kind == Op && t.Text == "(":
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !p.isOp(")") {
			return nil, p.errorf(p.peek(), "want )")
		}
		p.next()
		return x, nil
	case t.Kind == EOF:
		return nil, p.errorf(t, "unexpected end of input")
	}
	return nil, p.errorf(t, "unexpected %q", t.Text)
}
