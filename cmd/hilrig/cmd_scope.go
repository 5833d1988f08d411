package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hilrig/hilrig/scopes/scopecli"
)

// runScope is the "hilrig scope" sub-command: idn, measure, reset and sim.
// The logic lives in scopes/scopecli.
func runScope(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := scopecli.Run(ctx, args, stdout, stderr)
	if errors.Is(err, scopecli.ErrUsage) {
		// scopecli's message already starts with "usage"; keep one.
		return fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), "usage: "))
	}
	return err
}
