// Package calc is a small calculator language (see doc.go); this file
// is its session.
package calc

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Session evaluates lines one after another, keeping the variables they
// assign. Its Env starts with pi and e.
type Session struct {
	Env Env
}

// NewSession returns a session whose Env holds pi and e.
func NewSession() *Session {
	return &Session{Env: Env{"pi": math.Pi, "e": math.E}}
}

// Line evaluates one line: "" for a blank line; "name = value" for an
// assignment, which sets the variable; else the expression's value. On an
// error nothing changes.
func (s *Session) Line(line string) (string, error) {
	if strings.TrimSpace(line) == "" {
		return "", nil
	}
	toks, err := Lex(line)
	if err != nil {
		return "", err
	}
	name, src := "", line
	if len(toks) > 2 && toks[0].Kind == Ident && toks[1].Kind == Op && toks[1].Text == "=" {
		name, src = toks[0].Text, line[toks[1].Pos+1:]
	}
	e, err := Parse(src)
	if err != nil {
		return "", err
	}
	v, err := Eval(e, s.Env)
	if err != nil {
		return "", err
	}
	out := strconv.FormatFloat(v, 'g', -1, 64)
	if name == "" {
		return out, nil
	}
	if s.Env == nil {
		s.Env = Env{}
	}
	s.Env[name] = v
	return name + " = " + out, nil
}

// Run reads lines from r and writes each one's result to w — nothing for
// a blank line, "error: ..." for a line that fails — until r ends; it
// returns only read and write errors.
func Run(r io.Reader, w io.Writer) error {
	s := NewSession()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		out, err := s.Line(sc.Text())
		switch {
		case err != nil:
			out = "error: " + err.Error()
		case out == "":
			continue
		}
		if _, err := fmt.Fprintln(w, out); err != nil {
			return err
		}
	}
	return sc.Err()
}
