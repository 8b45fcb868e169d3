// Command calc prints a few results of package calc.
package main

import (
	"fmt"

	"github.com/apiary-dev/apiary/internal/demo/project/calc"
)

func main() {
	fmt.Println(calc.Add(2, 3), calc.Sub(7, 2), calc.Mul(4, 5))
}
