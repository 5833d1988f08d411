//go:build linux

package ddsshm_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/hilrig/hilrig/internal/ddsshm"
)

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// A killed participant's files go, a live one's stay (its _el lock is
// held), files nobody recorded stay, and Files finds what a process has
// open.
func TestRemoveZombies(t *testing.T) {
	dir := t.TempDir()
	dead := filepath.Join(dir, "fastrtps_0123456789abcdef")
	port := filepath.Join(dir, "fastrtps_port7411")
	live := filepath.Join(dir, "fastrtps_fedcba9876543210")
	other := filepath.Join(dir, "fastrtps_1111111111111111")
	for _, p := range []string{dead, dead + "_el", port, port + "_el", filepath.Join(dir, "sem.fastrtps_port7411_mutex"), live, live + "_el", other, other + "_el"} {
		touch(t, p)
	}
	// The live owner: an flock on its _el file, as Fast DDS holds it.
	lf, err := os.OpenFile(live+"_el", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	// Files: what this process has open under dir, _el folded into its segment.
	got, err := ddsshm.Files(os.Getpid(), dir)
	if err != nil || !slices.Equal(got, []string{live}) {
		t.Errorf("Files = %v, %v; want [%s] (the open _el names its segment)", got, err, live)
	}

	removed, err := ddsshm.RemoveZombies([]string{dead, port, live, filepath.Join(dir, "fastrtps_gone")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{dead, port}) {
		t.Errorf("removed %v, want the dead participant's and the port's", removed)
	}
	for _, p := range []string{dead, dead + "_el", port, port + "_el", filepath.Join(dir, "sem.fastrtps_port7411_mutex")} {
		if exists(p) {
			t.Errorf("%s left", p)
		}
	}
	for _, p := range []string{live, live + "_el", other, other + "_el"} {
		if !exists(p) {
			t.Errorf("%s removed: live or not recorded", p)
		}
	}
}
