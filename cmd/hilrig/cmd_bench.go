package main

import (
	"context"
	"errors"
	"io"
)

// runBench is the "hilrig bench" sub-command. Placeholder until its area lands.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
