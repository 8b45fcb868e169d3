// Package textkit holds small text utilities.
package textkit
