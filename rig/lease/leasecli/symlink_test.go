package leasecli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLeaseFollowsNoPlantedSymlink (issue 31, finding 4d): `hilrig rack
// lease` writes nothing through a symbolic link planted in the lease
// directory. Before, it wrote <rack>.lease.<pid>.tmp with O_CREAT|O_TRUNC,
// following a link planted there (fs.protected_symlinks does not cover a
// directory that is not sticky and world-writable) and overwrote the
// link's target, a root-only 0600 file, with the lease JSON; a link
// planted as <rack>.lease was read through.
func TestLeaseFollowsNoPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(victim, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, hp := startHolder(t)

	// The old temporary file name, for every pid this process might use.
	if err := os.Symlink(victim, filepath.Join(dir, fmt.Sprintf("lab1.lease.%d.tmp", os.Getpid()))); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "lease", "-dir", dir, "-holder", "alice", "-pid", hp, "lab1"); err != nil {
		t.Fatalf("lease beside a planted temporary-file link: %q, %v", out, err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root only\n" {
		t.Fatalf("the link's target after lease: %q, %v; want it untouched", b, err)
	}

	// A link planted as the lease file itself is refused, naming it.
	planted := filepath.Join(dir, "lab2.lease")
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, "lease", "-dir", dir, "-holder", "alice", "-pid", hp, "lab2")
	if err == nil || !strings.Contains(err.Error(), planted) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("lease with %s a symbolic link: %v; want an error naming it", planted, err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root only\n" {
		t.Fatalf("the link's target after lease: %q, %v; want it untouched", b, err)
	}
	if fi, err := os.Lstat(planted); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s after lease: %v, %v; want the link left for the operator to inspect", planted, fi, err)
	}
}
