package counters

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fake(t *testing.T, root, rel, s string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

const devShm = "/dev/sda1 / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw,nosuid,size=24683548k 0 0\n"

// HugeSupport explains, from a fake /proc and /sys, why a mapping could
// not get huge pages, and says so when it could.
func TestHugeSupportFakeTree(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		nr, meminfo, thp, mounts string
		ok                       bool
		want                     []string
	}{
		{"none", "0\n", "HugePages_Free:        0\nHugepagesize:       2048 kB\n", "always within_size advise [never] deny force\n", devShm, false,
			[]string{"pool empty (vm.nr_hugepages=0", "/dev/shm mounted without huge= (never; e.g. mount -o remount,huge=within_size /dev/shm)"}},
		{"pool used up", "4\n", "HugePages_Free:        0\nHugepagesize:       2048 kB\n", "[never]\n", devShm, false,
			[]string{"all vm.nr_hugepages=4 pages in use"}},
		{"pool", "4\n", "HugePages_Free:        3\nHugepagesize:       2048 kB\n", "[never]\n", devShm, true,
			[]string{"hugetlb: 3 free 2 MiB pages of vm.nr_hugepages=4"}},
		// shmem_enabled=advise is the internal mount's policy: /dev/shm
		// without huge= still gets none.
		{"shmem advise, mount never", "0\n", "HugePages_Free:        0\n", "always within_size [advise] never deny force\n", devShm, false,
			[]string{"/dev/shm mounted without huge="}},
		{"mount within_size", "0\n", "HugePages_Free:        0\n", "[never]\n", devShm + "tmpfs /dev/shm tmpfs rw,huge=within_size 0 0\n", true,
			[]string{"/dev/shm mounted huge=within_size"}},
		// advise works: the middleware madvises before it reserves
		// (shm.TestHugePagesOnAdviseTmpfs checks it on a real mount).
		{"mount advise", "0\n", "HugePages_Free:        0\n", "[never]\n", devShm + "tmpfs /dev/shm tmpfs rw,huge=advise 0 0\n", true,
			[]string{"/dev/shm mounted huge=advise (the middleware madvises"}},
		{"deny", "0\n", "HugePages_Free:        0\n", "always [deny]\n", devShm + "tmpfs /dev/shm tmpfs rw,huge=always 0 0\n", false,
			[]string{"shmem_enabled=deny"}},
		{"force", "0\n", "HugePages_Free:        0\n", "always [force]\n", devShm, true,
			[]string{"shmem_enabled=force"}},
		{"not tmpfs", "0\n", "HugePages_Free:        0\n", "[advise]\n", "/dev/sda1 / ext4 rw 0 0\n", false,
			[]string{"/dev/shm is on ext4, not tmpfs"}},
		{"no kernel support", "", "", "", "", false, []string{"without CONFIG_HUGETLBFS", "without CONFIG_TRANSPARENT_HUGEPAGE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			p := Paths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
			if tc.nr != "" {
				fake(t, root, "proc/sys/vm/nr_hugepages", tc.nr)
				fake(t, root, "proc/meminfo", tc.meminfo)
				fake(t, root, "sys/kernel/mm/transparent_hugepage/shmem_enabled", tc.thp)
				fake(t, root, "proc/mounts", tc.mounts)
			}
			w, ok := HugeSupport(p, "/dev/shm")
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v (%s)", ok, tc.ok, w)
			}
			for _, s := range tc.want {
				if !strings.Contains(w, s) {
					t.Errorf("%q lacks %q", w, s)
				}
			}
		})
	}
}
