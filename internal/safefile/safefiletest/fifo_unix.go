//go:build unix

package safefiletest

import (
	"path/filepath"
	"syscall"
	"testing"
)

// FIFO makes a named pipe (mode 0600) called name in dir and returns its
// path. Opening it for reading blocks until a writer comes, which is what
// the callers' tests show they no longer wait for.
func FIFO(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
