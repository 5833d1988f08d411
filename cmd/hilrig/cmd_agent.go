package main

import (
	"context"
	"io"
	"os"

	"github.com/hilrig/hilrig/agent"
)

// runAgent is the "hilrig agent" sub-command: the process that runs on a
// board, controlled over stdin/stdout with the line-delimited JSON protocol
// of agentproto. Logic lives in agent.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return agent.Main(ctx, args, os.Stdin, stdout, stderr, Version())
}
