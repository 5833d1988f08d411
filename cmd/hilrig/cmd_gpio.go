package main

import (
	"context"
	"errors"
	"io"
)

// runGPIO is the "hilrig gpio" sub-command. Placeholder until its area lands.
func runGPIO(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
