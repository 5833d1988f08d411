package testkit

import (
	"os"
	"testing"
)

// NeedRoot skips the test unless the process runs as root (effective UID
// 0); why says what needs root and is the skip message.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip(why)
	}
}
