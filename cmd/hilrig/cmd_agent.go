package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hilrig/hilrig/agent"
)

// runAgent is the "hilrig agent" sub-command: the process that runs on a
// board, controlled over stdin/stdout with the line-delimited JSON protocol
// of agentproto. Logic lives in agent.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := agent.Main(ctx, args, os.Stdin, stdout, stderr, Version())
	if errors.Is(err, agent.ErrUsage) {
		// "usage: flag provided but not defined: -x", not "usage: agent: usage: …".
		return fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), agent.ErrUsage.Error()+": "))
	}
	return err
}
