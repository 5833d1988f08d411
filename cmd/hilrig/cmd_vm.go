package main

import (
	"context"
	"errors"
	"io"
)

// runVM is the "hilrig vm" sub-command. Placeholder until its area lands.
func runVM(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
