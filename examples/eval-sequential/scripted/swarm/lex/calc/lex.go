// Package calc is a small calculator language (see doc.go); this file
// is its lexer.
package calc

import (
	"errors"
	"fmt"
)

// ErrLex is wrapped by the errors of Lex.
var ErrLex = errors.New("calc: bad character")

// Kind is what a token is.
type Kind int

// Token kinds.
const (
	Number Kind = iota // 12, 0.5, 3.
	Ident              // a name
	Op                 // one of + - * / ^ ( ) , =
	EOF                // the end of the input, always the last token
)

func (k Kind) String() string {
	switch k {
	case Number:
		return "Number"
	case Ident:
		return "Ident"
	case Op:
		return "Op"
	case EOF:
		return "EOF"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Token is one token of the input: its kind, its text and the byte offset
// where it starts.
type Token struct {
	Kind Kind
	Text string
	Pos  int
}

// Lex splits src into tokens, skipping spaces and tabs; the last token is
// EOF, at len(src). A character that starts no token is an error wrapping
// ErrLex that gives its offset.
func Lex(src string) ([]Token, error) {
	var out []Token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			j := i
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			if j < len(src) && src[j] == '.' {
				j++
				for j < len(src) && isDigit(src[j]) {
					j++
				}
			}
			out = append(out, Token{Number, src[i:j], i})
			i = j
		case isLetter(c):
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			out = append(out, Token{Ident, src[i:j], i})
			i = j
		case c == '+' || c == '-' || c == '*' || c == '/' || c == '^' || c == '(' || c == ')' || c == ',' || c == '=':
			out = append(out, Token{Op, src[i : i+1], i})
			i++
		default:
			return nil, fmt.Errorf("%w %q at offset %d", ErrLex, rune(c), i)
		}
	}
	return append(out, Token{EOF, "", len(src)}), nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
