// Command apiary runs many coding agents safely against one repository and one
// API account: a scheduling gateway, a durable MCP write surface, a task
// runtime and a self-organizing swarm. See the README for the subcommands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/apiary-dev/apiary/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
