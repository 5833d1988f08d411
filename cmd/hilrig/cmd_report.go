package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportcli"
)

// runReport is the "hilrig report" sub-command (html, compare); the logic
// lives in report/reportcli. It maps usage mistakes to errUsage (exit 2) and
// a regression verdict to errRegression (exit 3).
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := reportcli.Run(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, reportcli.ErrUsage):
		return fmt.Errorf("%w: %w", errUsage, err)
	case errors.Is(err, report.ErrRegression):
		return fmt.Errorf("%w: %w", errRegression, err)
	}
	return err
}
