package tracetest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

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
	end := mono() + ns
	if _, err := unix.Write(3, []byte{'r'}); err != nil {
		return 5
	}
	for mono() < end {
	}
	return 0
}

// StartHog starts the hog on cpu for d and returns once it holds the CPU
// at SCHED_FIFO HogPriority; wait reaps it. The ready byte comes through
// a blocking pipe read on the caller's own thread: a wake-up through the
// Go netpoller could need a thread the hog is starving. A caller running
// at SCHED_FIFO should set SCHED_FLAG_RESET_ON_FORK, or the hog's runtime
// threads inherit its class.
func StartHog(cpu int, d time.Duration) (wait func() error, err error) {
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
	return cmd.Wait, nil
}

const envHog = "HLR_TRACETEST_HOG" // "<cpu>,<duration ns>"
