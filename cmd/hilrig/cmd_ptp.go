package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/timesync/ptpcli"
)

// runPTP is the "hilrig ptp" sub-command: status and watch of ptp4l
// management sockets (logic in timesync/ptpcli).
func runPTP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := ptpcli.Run(ctx, args, stdout, stderr)
	if errors.Is(err, ptpcli.ErrUsage) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}
