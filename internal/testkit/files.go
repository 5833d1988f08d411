package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes s to path (0644), making its directories first: one
// file of a fake /proc, /sys or tracefs tree. It fails t on any error.
func WriteFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
