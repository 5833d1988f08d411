package main

import (
	"context"
	"errors"
	"io"
)

// runAgent is the "hilrig agent" sub-command. Placeholder until its area lands.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
