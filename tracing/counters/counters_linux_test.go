package counters

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func read(t *testing.T, tids []int) Sample {
	t.Helper()
	s, err := Read(0, tids)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestForcedGCShowsPause(t *testing.T) {
	a := read(t, nil)
	runtime.GC()
	runtime.GC()
	c := Delta(a, read(t, nil))
	if c.GCCycles < 2 || c.GCPauseTotalNs <= 0 || c.GCPauseMaxNs <= 0 || c.GCPauseMaxNs > c.GCPauseTotalNs*4 {
		t.Fatalf("two forced GCs: %+v", c)
	}
	if c2 := Delta(read(t, nil), read(t, nil)); c2.GCCycles != 0 || c2.GCPauseTotalNs != 0 {
		t.Fatalf("no GC between samples but %+v", c2)
	}
}

func TestFreshMappingShowsFaults(t *testing.T) {
	const size = 4 << 20
	a := read(t, nil)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE) // one fault per 4 KiB page
	for i := 0; i < size; i += os.Getpagesize() {
		mem[i] = 1
	}
	c := Delta(a, read(t, nil))
	if want := int64(size / os.Getpagesize()); c.MinorFaults < want {
		t.Fatalf("touching %d fresh pages made %d minor faults", want, c.MinorFaults)
	}
}

func TestThreadContextSwitches(t *testing.T) {
	tid := make(chan int)
	step := make(chan struct{})
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		<-step
		for range 20 {
			_ = unix.Nanosleep(&unix.Timespec{Nsec: int64(100 * time.Microsecond)}, nil) // blocks the thread: a voluntary switch each
		}
		close(done)
	}()
	id := <-tid
	a := read(t, []int{id})
	close(step)
	<-done
	c := Delta(a, read(t, []int{id}))
	if c.VoluntaryCtxSwitches < 20 {
		t.Fatalf("20 sleeps on thread %d: %+v", id, c)
	}
}

func mapping(t *testing.T, mem []byte) Mapping {
	t.Helper()
	a := uint64(uintptr(unsafe.Pointer(&mem[0])))
	ms, err := Mappings(0, a, a+uint64(len(mem)))
	if err != nil || len(ms) != 1 {
		t.Fatalf("smaps entries for %#x: %v, %v", a, ms, err)
	}
	return ms[0]
}

// TestHugetlbMappingShows2MiB maps the way middleware NodeOptions.HugePages
// does (MAP_SHARED|MAP_ANONYMOUS|MAP_HUGETLB). When the pool is empty and
// cannot be grown, the smaps of the fallback mapping must say 4 KiB and
// "no huge pages", not claim huge ones.
func TestHugetlbMappingShows2MiB(t *testing.T) {
	const size = 2 << 20
	if hostProc.Meminfo("HugePages_Free") < 1 && os.Geteuid() == 0 {
		const p = "/proc/sys/vm/nr_hugepages"
		old, err := os.ReadFile(p)
		if err == nil {
			n, _ := strconv.Atoi(strings.TrimSpace(string(old)))
			if os.WriteFile(p, []byte(strconv.Itoa(n+1)), 0) == nil {
				t.Cleanup(func() { _ = os.WriteFile(p, old, 0) })
			}
		}
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB)
	if err != nil {
		t.Logf("MAP_HUGETLB refused (%v): checking the fallback is reported honestly", err)
		mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(mem)
		mem[0] = 1
		m := mapping(t, mem)
		if m.Huge() || m.KernelPageSizeKB != int64(os.Getpagesize()/1024) || !strings.Contains(m.PageSizeWords(), "no huge pages") {
			t.Fatalf("fallback mapping reported as %+v (%s)", m, m.PageSizeWords())
		}
		return
	}
	defer unix.Munmap(mem)
	mem[0] = 1
	m := mapping(t, mem)
	if m.KernelPageSizeKB != 2048 || m.MMUPageSizeKB != 2048 || !m.Huge() || m.PageSizeWords() != "2 MiB hugetlb pages" {
		t.Fatalf("hugetlb mapping reported as %+v (%s)", m, m.PageSizeWords())
	}
	// And a normal mapping next to it is not huge.
	small, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(small)
	small[0] = 1
	if s := mapping(t, small); s.Huge() {
		t.Fatalf("4 KiB mapping reported huge: %+v", s)
	}
}

// Two threads pinned to one CPU, both busy for 60 ms of wall time: each
// waits on the run queue while the other runs, and schedstat says so.
func TestRunDelayUnderContention(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skipf("no schedstat (CONFIG_SCHED_INFO): %v", err)
	}
	tids := make(chan int, 2)
	start := make(chan struct{})
	done := make(chan struct{}, 2)
	release := make(chan struct{})
	defer close(release)
	for range 2 {
		go func() {
			// Exits locked: the runtime retires the pinned thread.
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(0)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				tids <- -1
				return
			}
			tids <- unix.Gettid()
			<-start
			for end := time.Now().Add(60 * time.Millisecond); time.Now().Before(end); {
			}
			done <- struct{}{}
			<-release
		}()
	}
	a, b := <-tids, <-tids
	if a < 0 || b < 0 {
		t.Skip("cannot pin to CPU 0")
	}
	s0 := read(t, []int{a})
	close(start)
	<-done
	<-done
	c := Delta(s0, read(t, []int{a}))
	if c.RunDelayNs < int64(5*time.Millisecond) {
		t.Fatalf("thread %d shared CPU 0 with a busy thread for 60 ms but waited %v on the run queue", a, time.Duration(c.RunDelayNs))
	}
	t.Logf("run-queue wait %v, involuntary switches %d", time.Duration(c.RunDelayNs), c.InvoluntaryCtxSwitches)
}

// hostProc reads this machine's /proc.
var hostProc = Paths{Proc: "/proc"}
