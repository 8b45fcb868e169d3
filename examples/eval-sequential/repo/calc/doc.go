// Package calc is a small calculator language.
//
// A line is an expression, or an assignment "name = expression". Numbers
// are decimal (12, 0.5, 3.); names are a letter or underscore followed by
// letters, digits and underscores. The operators, loosest first, are:
// addition and subtraction (+ and -, left to right); multiplication and
// division (* and /, left to right); negation (a prefix -); and power (^,
// right to left, binding tighter than negation: -2^2 is -4).
//
// Parentheses group; name(a, b, ...) calls a built-in function: sqrt, abs,
// min and max (min and max take one or more arguments).
//
// The package is built in layers: Lex turns text into tokens, Parse turns
// tokens into an expression tree, Eval computes its value, and a Session
// keeps variables from line to line.
package calc
