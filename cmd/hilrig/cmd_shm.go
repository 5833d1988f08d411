package main

import (
	"context"
	"errors"
	"io"
)

// runShm is the "hilrig shm" sub-command. Placeholder until its area lands.
func runShm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
