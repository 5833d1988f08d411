package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/vmboard/vmcli"
)

// runVM is the "hilrig vm" sub-command: build and run the virtual board
// (QEMU, a real kernel with gpio-sim and ptp-sim). The logic lives in
// vmboard/vmcli.
func runVM(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := vmcli.Run(ctx, args, stdout, stderr)
	if errors.Is(err, vmcli.ErrUsage) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}
