package shm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/middleware/internal/shm"
	"github.com/hilrig/hilrig/tracing/counters"
)

// adviseTmpfs mounts a private 64 MiB tmpfs with huge=advise (as /dev/shm
// can be mounted; the test leaves /dev/shm alone) and unmounts it when
// the test ends. It skips, saying why, where tmpfs THP is not available.
func adviseTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs with huge=advise")
	}
	// shmem_enabled governs the kernel's internal mount only, except
	// "deny" (off for every tmpfs); a missing file means a kernel without
	// CONFIG_TRANSPARENT_HUGEPAGE. (The anonymous-memory switch
	// transparent_hugepage/enabled does not apply to tmpfs.)
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/shmem_enabled")
	if err != nil {
		t.Skipf("no transparent huge pages for tmpfs: %v", err)
	}
	if strings.Contains(string(b), "[deny]") {
		t.Skipf("tmpfs huge pages denied system-wide: shmem_enabled %q", strings.TrimSpace(string(b)))
	}
	// prctl(PR_SET_THP_DISABLE) in an ancestor turns THP off for us.
	if st, _ := os.ReadFile("/proc/self/status"); strings.Contains(string(st), "THP_enabled:\t0") {
		t.Skip("THP disabled for this process (prctl PR_SET_THP_DISABLE)")
	}
	dir := t.TempDir()
	if err := unix.Mount("hilrig-huge-advise", dir, "tmpfs", 0, "size=64m,huge=advise"); err != nil {
		t.Skipf("cannot mount a tmpfs with huge=advise on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// thpKB returns the transparent-huge-page kB of the mappings of mem, per
// /proc/self/smaps (the reader the agent's per-case counters use).
func thpKB(t *testing.T, mem []byte) int64 {
	t.Helper()
	a := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	ms, err := counters.Mappings(0, a, a+uint64(len(mem)))
	if err != nil {
		t.Fatal(err)
	}
	var kb int64
	for _, m := range ms {
		kb += m.THPKB
		t.Logf("%#x-%#x %s: %s", m.Start, m.End, m.Path, m.PageSizeWords())
	}
	return kb
}

// hugeBlocks counts the 2 MiB-aligned file blocks in [from, to) that a
// slot mapping can hold as one huge page: the first block shares its
// range with the header, which is not madvised, so it never is.
func hugeBlocks(g shm.Geometry, to int) int64 {
	const huge = 2 << 20
	n := int64(0)
	for b := huge; b+huge <= min(to+huge-1, g.TotalSize); b += huge {
		if b >= g.SlotsOff {
			n++
		}
	}
	return n
}

// With HugePages, a segment on a tmpfs mounted huge=advise gets 2 MiB
// pages for its slots: the reservation that commits its pages must come
// after madvise(MADV_HUGEPAGE), since fallocate alone allocates 4 KiB
// pages on an advise mount. Checked for the working set reserved at
// creation and for the rest of the pool reserved by the writer.
func TestHugePagesOnAdviseTmpfs(t *testing.T) {
	dir := adviseTmpfs(t)
	p := shm.Params{Topic: "huge", TopicID: 3, MaxPayload: 1 << 20, RingLen: 4}
	g := p.Geometry()
	seg, err := shm.Open(filepath.Join(dir, shm.FileName("t", "huge")), p, shm.OpenOptions{Mode: 0o600, Gid: -1, PID: os.Getpid(), HugePages: true})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close() // before the unmount
	if !seg.HugeAdvised {
		t.Fatal("madvise(MADV_HUGEPAGE) refused on a huge=advise tmpfs")
	}
	work := g.SlotsOff + g.WorkSlots*g.SlotSize
	if got, want := thpKB(t, seg.Mem()), 2048*hugeBlocks(g, work); want == 0 || got < want {
		t.Fatalf("working set of %d bytes: %d kB in transparent huge pages, want %d (every 2 MiB block of the slots)", work, got, want)
	}
	w, err := shm.NewWriter(seg.Region, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.ReserveAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := thpKB(t, seg.Mem()), 2048*hugeBlocks(g, g.TotalSize); got < want {
		t.Fatalf("whole pool of %d bytes: %d kB in transparent huge pages, want %d", g.TotalSize, got, want)
	}
}
