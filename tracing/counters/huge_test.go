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

// HugeSupport explains, from a fake /proc and /sys, why a mapping could
// not get huge pages, and says so when it could.
func TestHugeSupportFakeTree(t *testing.T) {
	for _, tc := range []struct {
		name             string
		nr, meminfo, thp string
		ok               bool
		want             []string
	}{
		{"none", "0\n", "HugePages_Free:        0\nHugepagesize:       2048 kB\n", "always within_size advise [never] deny force\n", false,
			[]string{"pool empty (vm.nr_hugepages=0", "shmem_enabled=never (never for /dev/shm)"}},
		{"pool used up", "4\n", "HugePages_Free:        0\nHugepagesize:       2048 kB\n", "[never]\n", false,
			[]string{"all vm.nr_hugepages=4 pages in use"}},
		{"pool", "4\n", "HugePages_Free:        3\nHugepagesize:       2048 kB\n", "[never]\n", true,
			[]string{"hugetlb: 3 free 2 MiB pages of vm.nr_hugepages=4"}},
		{"thp", "0\n", "HugePages_Free:        0\n", "always within_size [advise] never deny force\n", true,
			[]string{"shmem_enabled=advise"}},
		{"no kernel support", "", "", "", false, []string{"without CONFIG_HUGETLBFS", "without CONFIG_TRANSPARENT_HUGEPAGE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			p := Paths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
			if tc.nr != "" {
				fake(t, root, "proc/sys/vm/nr_hugepages", tc.nr)
				fake(t, root, "proc/meminfo", tc.meminfo)
				fake(t, root, "sys/kernel/mm/transparent_hugepage/shmem_enabled", tc.thp)
			}
			w, ok := HugeSupport(p)
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
