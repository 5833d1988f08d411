package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/tracing/counters"
)

// A pinned endpoint's context switches are its locked thread's alone:
// 20 sleeps on it count, 2000 sleeps on another thread of the process
// do not.
func TestEndpointCountersLockedThread(t *testing.T) {
	tid := make(chan int)
	run := make(chan struct{})
	done := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	go func() {
		// Locked until the test ends and then exits locked, so the
		// runtime retires the thread: the noise goroutine can never run
		// on it.
		runtime.LockOSThread()
		tid <- unix.Gettid()
		<-run
		for range 20 {
			_ = unix.Nanosleep(&unix.Timespec{Nsec: int64(50 * time.Microsecond)}, nil) // a voluntary switch each
		}
		close(done)
		<-release
	}()
	id := <-tid
	c := startCounters([]int{id})
	if !c.ok {
		t.Fatal("cannot read /proc")
	}
	noise := make(chan struct{})
	go func() {
		runtime.LockOSThread() // another thread, not the endpoint's
		defer runtime.UnlockOSThread()
		for range 2000 {
			_ = unix.Nanosleep(&unix.Timespec{Nsec: int64(10 * time.Microsecond)}, nil)
		}
		close(noise)
	}()
	close(run)
	<-done
	<-noise
	ec := c.finish("pub", t.TempDir(), false)
	if ec == nil {
		t.Fatal("no counters")
	}
	if ec.VoluntaryCtxSwitches < 20 || ec.VoluntaryCtxSwitches > 1000 {
		t.Fatalf("endpoint thread slept 20 times, another 2000: counted %d voluntary switches", ec.VoluntaryCtxSwitches)
	}
	if !strings.Contains(ec.Method, "TID "+strconv.Itoa(id)) {
		t.Fatalf("method does not name the thread: %s", ec.Method)
	}
	// Unpinned: every thread counts, the method says so.
	if all := startCounters(nil).finish("pub", t.TempDir(), false); all == nil || !strings.Contains(all.Method, "every thread") {
		t.Fatalf("unpinned counters %+v", all)
	}
}

// reserveHugePages makes sure n free 2 MiB hugetlb pages exist (root:
// raising vm.nr_hugepages, restored in cleanup), or skips saying why.
func reserveHugePages(t *testing.T, n int64) {
	t.Helper()
	const p = "/proc/sys/vm/nr_hugepages"
	free := hostProc.Meminfo("HugePages_Free")
	if free >= n {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("%d free huge pages, need %d, and not root to reserve them", free, n)
	}
	old, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("no hugetlb: %v", err)
	}
	cur, err := strconv.ParseInt(strings.TrimSpace(string(old)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(p, old, 0); err != nil {
			t.Errorf("restore %s to %s: %v", p, strings.TrimSpace(string(old)), err)
		}
	})
	if err := os.WriteFile(p, []byte(strconv.FormatInt(cur+n-free, 10)), 0); err != nil {
		t.Skipf("cannot reserve huge pages: %v", err)
	}
	if got := hostProc.Meminfo("HugePages_Free"); got < n {
		t.Skipf("asked the kernel for %d more huge pages, %d free (memory fragmented)", n-free, got)
	}
}

// With NodeOptions.HugePages and a hugetlb pool, the intra-process ring's
// mapping is reported as 2 MiB pages from smaps, and not flagged.
func TestEndpointCountersHugePages(t *testing.T) {
	reserveHugePages(t, 4)
	c := startCounters(nil)
	node, err := middleware.OpenNode("huge", &middleware.NodeOptions{Domain: "hugetest", ShmDir: t.TempDir(), HugePages: true})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	pub, err := node.NewPublisher(middleware.Contract{Topic: "huge", MaxPayload: 64 << 10, Transport: middleware.TransportIntra, Depth: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Send(make([]byte, 64<<10)); err != nil { // touch the ring: smaps counts resident pages
		t.Fatal(err)
	}
	ec := c.finish("pub", "/nonexistent", true)
	var huge int
	for _, m := range ec.Mappings {
		if m.KernelPageSizeKB == 2048 && m.MMUPageSizeKB == 2048 {
			huge++
			if m.Words != "2 MiB hugetlb pages" || !m.HugeRequested {
				t.Errorf("2 MiB mapping described as %+v", m)
			}
		}
	}
	if huge == 0 {
		t.Fatalf("no 2 MiB mapping among %+v", ec.Mappings)
	}
}

// A mapping that asked for huge pages and got 4 KiB ones says why, from
// the system's huge-page supply (a fake tree with none here).
func TestEndpointCountersHugePagesRefusedSaysWhy(t *testing.T) {
	root := t.TempDir()
	dir := t.TempDir()
	for rel, s := range map[string]string{
		"proc/sys/vm/nr_hugepages": "0\n",
		"proc/meminfo":             "HugePages_Free:        0\nHugepagesize:       2048 kB\n",
		"sys/kernel/mm/transparent_hugepage/shmem_enabled": "always within_size [advise] never deny force\n",
		"proc/mounts": "tmpfs " + dir + " tmpfs rw,relatime 0 0\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := hugePaths
	hugePaths = counters.Paths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
	t.Cleanup(func() { hugePaths = old })

	c := startCounters(nil)
	node, err := middleware.OpenNode("small", &middleware.NodeOptions{Domain: "smalltest", ShmDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	pub, err := node.NewPublisher(middleware.Contract{Topic: "small", MaxPayload: 4096, Transport: middleware.TransportShm, Depth: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Send(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	ec := c.finish("pub", dir, true)
	if len(ec.Mappings) == 0 {
		t.Fatalf("no mapping under %s", dir)
	}
	for _, m := range ec.Mappings {
		if !strings.Contains(m.Words, "not granted: hugetlb: pool empty") || !strings.Contains(m.Words, "mounted without huge= (never; e.g. mount -o remount,huge=within_size") {
			t.Errorf("4 KiB mapping with huge pages asked: %q", m.Words)
		}
	}
}

// With NodeOptions.HugePages on a segment in a tmpfs mounted
// huge=within_size (a private mount for the test: root; /dev/shm is left
// alone), the slots are reported in 2 MiB transparent huge pages. (A
// huge=advise mount is checked in middleware/internal/shm,
// TestHugePagesOnAdviseTmpfs.)
func TestEndpointCountersShmTHP(t *testing.T) {
	testkit.NeedRoot(t, "mounting a tmpfs needs root")
	if sel := selectedChoice(readFile("/sys/kernel/mm/transparent_hugepage/shmem_enabled")); sel == "deny" || sel == "" {
		t.Skipf("tmpfs THP unavailable: shmem_enabled %q", sel)
	}
	dir := t.TempDir()
	if err := unix.Mount("hilrig-thp", dir, "tmpfs", 0, "size=64m,huge=within_size"); err != nil {
		t.Skipf("mount tmpfs huge=within_size: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	c := startCounters(nil)
	node, err := middleware.OpenNode("thp", &middleware.NodeOptions{Domain: "thp", ShmDir: dir, HugePages: true})
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	pub, err := node.NewPublisher(middleware.Contract{Topic: "thp", MaxPayload: size, Transport: middleware.TransportShm, Depth: 4}, nil)
	if err != nil {
		node.Close()
		t.Fatal(err)
	}
	payload := make([]byte, size)
	for range 8 { // touch every slot of the ring
		if err := pub.Send(payload); err != nil {
			t.Fatal(err)
		}
	}
	ec := c.finish("pub", dir, true)
	pub.Close()
	node.Close() // before the unmount
	var thp int64
	for _, m := range ec.Mappings {
		thp += m.THPKB
		t.Logf("%s: %s", m.Path, m.Words)
	}
	if thp < 2048 {
		t.Fatalf("no 2 MiB transparent huge page in the segment's mappings: %+v", ec.Mappings)
	}
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

func selectedChoice(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

// hostProc reads this machine's /proc.
var hostProc = counters.Paths{Proc: "/proc"}
