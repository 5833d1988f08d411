package safefile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hilrig/hilrig/internal/safefile"
)

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
		private          bool
		kind             error
	}{
		{"fifo never blocks", fifo, "not a regular file (a named pipe)", false, safefile.ErrNotRegular},
		{"device", "/dev/zero", "not a regular file (a character device)", false, safefile.ErrNotRegular},
		{"directory", dir, "not a regular file (a directory)", false, safefile.ErrNotRegular},
		{"over the cap", big, "2048 bytes, larger than the test limit", false, safefile.ErrTooLarge},
		{"secret readable by others", open, "mode 0644", true, safefile.ErrExposed},
	} {
		t.Run(c.name, func(t *testing.T) {
			read := safefile.Read
			if c.private {
				read = safefile.ReadPrivate
			}
			_, err := read(c.path, 1024, "the test limit")
			if !errors.Is(err, safefile.ErrRefused) || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), c.path) {
				t.Fatalf("err = %v, want ErrRefused naming %s with %q", err, c.path, c.want)
			}
		})
	}
	if b, err := safefile.ReadPrivate(ok, 1024, "x"); err != nil || string(b) != "secret" {
		t.Fatalf("ReadPrivate(0600 file) = %q, %v", b, err)
	}
	if _, err := safefile.Read(filepath.Join(dir, "none"), 1024, "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}
