package main

import (
	"context"
	"errors"
	"io"
)

// runPTP is the "hilrig ptp" sub-command. Placeholder until its area lands.
func runPTP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
