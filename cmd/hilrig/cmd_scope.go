package main

import (
	"context"
	"errors"
	"io"
)

// runScope is the "hilrig scope" sub-command. Placeholder until its area lands.
func runScope(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
