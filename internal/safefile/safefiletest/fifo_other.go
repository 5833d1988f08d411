//go:build !unix

package safefiletest

import (
	"errors"
	"fmt"
	"testing"
)

// FIFO fails the test: there are no named pipes in a directory here.
func FIFO(t testing.TB, dir, name string) string {
	t.Helper()
	t.Fatal(fmt.Errorf("safefiletest: named pipe %s in %s: %w", name, dir, errors.ErrUnsupported))
	return ""
}
