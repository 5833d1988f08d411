// Package safefiletest makes the inputs package safefile refuses — a named
// pipe, a sparse file over a size cap — for the tests of its callers, so
// that each test states what it feeds in rather than how it is made.
//
// Its functions fail the test (t.Fatal) when the file cannot be made; they
// may be called from any goroutine that may call t.Fatal.
package safefiletest

import (
	"os"
	"testing"
)

// Sparse writes content to path (mode 0644) and extends the file to size
// bytes without writing the rest: a file that fstat reports as size bytes,
// NULs after content, taking no disk.
func Sparse(t testing.TB, path string, content []byte, size int64) {
	t.Helper()
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}
