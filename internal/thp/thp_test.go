package thp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTmpfs: the mount's huge= option decides for a tmpfs, shmem_enabled
// only through force and deny; the words name the mount and what to do.
func TestTmpfs(t *testing.T) {
	for _, c := range []struct {
		name, shmem, mounts, dir string
		ok                       bool
		words                    string
	}{
		{"advise mount, shmem never", "always within_size advise [never] deny force", "tmpfs /dev/shm tmpfs rw,nosuid,nodev,huge=advise 0 0", "/dev/shm", true, "/dev/shm mounted huge=advise"},
		{"no huge= option, shmem advise", "always within_size [advise] never deny force", "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0", "/dev/shm", false, "mount -o remount,huge=within_size /dev/shm"},
		{"deny overrides", "always within_size advise never [deny] force", "tmpfs /dev/shm tmpfs rw,huge=always 0 0", "/dev/shm", false, "deny"},
		{"force overrides", "always within_size advise never deny [force]", "tmpfs /dev/shm tmpfs rw 0 0", "/dev/shm", true, "force"},
		{"longest mount wins", "[never]", "tmpfs /dev/shm tmpfs rw 0 0\ntmpfs /dev/shm/hilrig tmpfs rw,huge=within_size 0 0", "/dev/shm/hilrig/seg", true, "/dev/shm/hilrig mounted huge=within_size"},
		{"not tmpfs", "[never]", "/dev/sda1 / ext4 rw 0 0", "/var/shm", false, "ext4, not tmpfs"},
		{"no THP in the kernel", "", "tmpfs /dev/shm tmpfs rw,huge=always 0 0", "/dev/shm", false, "CONFIG_TRANSPARENT_HUGEPAGE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
			thpDir := filepath.Join(sys, "kernel/mm/transparent_hugepage")
			for _, d := range []string{proc, thpDir} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(proc, "mounts"), []byte(c.mounts+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.shmem != "" {
				if err := os.WriteFile(filepath.Join(thpDir, "shmem_enabled"), []byte(c.shmem+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			words, ok := Tmpfs(proc, sys, c.dir)
			if ok != c.ok || !strings.Contains(words, c.words) {
				t.Errorf("Tmpfs = %q, %v; want %v and words containing %q", words, ok, c.ok, c.words)
			}
		})
	}
}
