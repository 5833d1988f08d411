package tracetest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RunHogIfChild runs the hog and exits when this process was started by
// StartHog; otherwise it returns at once. Call it first in TestMain.
func RunHogIfChild() {
	v := os.Getenv(envHog)
	if v == "" {
		return
	}
	os.Exit(runHog(v))
}

func runHog(v string) int {
	runtime.LockOSThread()
	c, d, ok := strings.Cut(v, ",")
	cpu, err1 := strconv.Atoi(c)
	ns, err2 := strconv.ParseInt(d, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 2
	}
	var set unix.CPUSet
	set.Set(cpu)
	if unix.SchedSetaffinity(0, &set) != nil || os.WriteFile("/proc/thread-self/comm", []byte(HogComm), 0) != nil {
		return 3
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 1 /* SCHED_FIFO */, Priority: HogPriority}
	if unix.SchedSetAttr(0, &attr, 0) != nil {
		return 4
	}
	// Sleep once so the kernel switches the hog in anew, now named and at
	// its RT priority on its CPU: the trace then shows a sched_switch to
	// "hlr-hog" itself, not to the re-executed test binary that became it
	// before the rename (which an explanation cannot tell from idle).
	_ = unix.Nanosleep(&unix.Timespec{Nsec: 100_000}, nil)
	// From here to the end of the spin this goroutine must not enter the
	// scheduler, which would park its locked thread on a futex — the hog
	// would give up the CPU it is to hold (seen as "hlr-hog S" in the
	// trace, mid-spin). So: Gosched now, because sysmon preempts a
	// goroutine that has run 10 ms since it was last scheduled, and this
	// one has run since the process began (StartHog bounds d below that);
	// raw syscalls, which the runtime neither enters nor leaves (sysmon
	// takes the P of a thread in a slow syscall — often slow in an
	// emulated board — and the thread returning finds none); the clock
	// through the runtime's vDSO call, not unix.ClockGettime, a syscall.
	// The count of voluntary switches over the spin proves it held.
	runtime.Gosched()
	end := time.Now().Add(time.Duration(ns))
	ready := [1]byte{'r'}
	if _, _, e := unix.RawSyscall(unix.SYS_WRITE, 3, uintptr(unsafe.Pointer(&ready[0])), 1); e != 0 {
		return 5
	}
	var before, after unix.Rusage
	if _, _, e := unix.RawSyscall(unix.SYS_GETRUSAGE, unix.RUSAGE_THREAD, uintptr(unsafe.Pointer(&before)), 0); e != 0 {
		return 6
	}
	for time.Now().Before(end) {
	}
	if _, _, e := unix.RawSyscall(unix.SYS_GETRUSAGE, unix.RUSAGE_THREAD, uintptr(unsafe.Pointer(&after)), 0); e != 0 {
		return 6
	}
	if after.Nvcsw != before.Nvcsw {
		return hogYielded
	}
	return 0
}

// StartHog starts the hog on cpu for d and returns once it holds the CPU
// at SCHED_FIFO HogPriority; wait reaps it and fails if the hog did not
// hold the CPU for all of d (it switched out voluntarily). The ready byte comes through
// a blocking pipe read on the caller's own thread: a wake-up through the
// Go netpoller could need a thread the hog is starving. A caller running
// at SCHED_FIFO should set SCHED_FLAG_RESET_ON_FORK, or the hog's runtime
// threads inherit its class.
func StartHog(cpu int, d time.Duration) (wait func() error, err error) {
	if d <= 0 || d > MaxHog {
		return nil, fmt.Errorf("hog for %v: want (0, %v]", d, MaxHog)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	defer unix.Close(p[0])
	w := os.NewFile(uintptr(p[1]), "hog-ready")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHog+"="+strconv.Itoa(cpu)+","+strconv.FormatInt(int64(d), 10))
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("start hog: %w", err)
	}
	var b [1]byte
	if n, err := unix.Read(p[0], b[:]); n != 1 || err != nil {
		_ = cmd.Wait()
		return nil, fmt.Errorf("hog did not start (%v): %v", err, cmd.ProcessState)
	}
	return func() error {
		err := cmd.Wait()
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == hogYielded {
			return fmt.Errorf("hog on CPU %d gave up its CPU during its %v spin (a voluntary context switch): the spike it was to cause is not what ran", cpu, d)
		}
		return err
	}, nil
}

// MaxHog is the longest spin StartHog runs: the Go runtime preempts a
// goroutine that has run 10 ms, and a preempted locked thread sleeps.
const MaxHog = 8 * time.Millisecond

// hogYielded is the hog's exit status when its thread switched out
// voluntarily during the spin.
const hogYielded = 7

const envHog = "HLR_TRACETEST_HOG" // "<cpu>,<duration ns>"
