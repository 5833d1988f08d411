package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hilrig/hilrig/middleware/shmtool"
)

// runShm is the "hilrig shm" sub-command (ls, clean); the logic lives in
// middleware/shmtool.
func runShm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := shmtool.Run(ctx, args, stdout, stderr)
	if errors.Is(err, shmtool.ErrUsage) {
		return fmt.Errorf("%w%s", errUsage, strings.TrimPrefix(err.Error(), shmtool.ErrUsage.Error()))
	}
	return err
}
