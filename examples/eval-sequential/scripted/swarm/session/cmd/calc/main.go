// Command calc reads calc lines from standard input and prints their
// results.
package main

import (
	"fmt"
	"os"

	"example.com/calc/calc"
)

func main() {
	if err := calc.Run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "calc:", err)
		os.Exit(1)
	}
}
