package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/gpio/gpiocli"
)

// runGPIO is the "hilrig gpio" sub-command: ls, mark, watch, sim. The logic
// lives in gpio/gpiocli.
func runGPIO(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := gpiocli.Run(ctx, args, stdout, stderr)
	if errors.Is(err, gpiocli.ErrUsage) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}
