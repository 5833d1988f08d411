package agent_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/internal/testkit"
)

// processCPUNs is this test process's CPU time (the agent runs in it).
func processCPUNs(t *testing.T) int64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestLoadRunsThreadsAndStops: a load of K threads is acknowledged, burns
// CPU (polled on the process's CPU time, with a deadline), stops on a
// stop message with a final that reports K threads each with CPU time,
// and after the final the process no longer burns K CPUs.
func TestLoadRunsThreadsAndStops(t *testing.T) {
	const k = 2
	s := startSession(t, t.TempDir())
	s.send(agentproto.NewStart(agentproto.Start{Endpoint: "load", Role: agentproto.Load,
		Load: &agentproto.LoadSpec{Threads: k}}))
	if m := s.expect(agentproto.KindStarted); m.Started.Endpoint != "load" {
		t.Fatalf("started = %+v", m.Started)
	}
	// Wait until the load has visibly run: 100 ms of CPU per thread.
	cpu0 := processCPUNs(t)
	testkit.Until(t, 20*time.Second, func() error {
		if used := time.Duration(processCPUNs(t) - cpu0); used < k*100*time.Millisecond {
			return fmt.Errorf("the load consumed %v of CPU, want ≥ %v", used, k*100*time.Millisecond)
		}
		return nil
	})
	s.send(agentproto.NewStop("load"))
	_, f := s.collect("load")
	if f.Role != agentproto.Load || f.Reason != agentproto.EndStopped {
		t.Errorf("final = %+v, want role load, reason stopped", f)
	}
	r := f.Load
	if r == nil {
		t.Fatalf("final without a load report: %+v", f)
	}
	if r.Threads != k || len(r.ThreadCPUNs) != k || r.Kind != agentproto.LoadALU || r.Work == 0 {
		t.Errorf("load report = %+v, want %d threads of alu with work done", r, k)
	}
	var sum int64
	for i, c := range r.ThreadCPUNs {
		if c <= 0 {
			t.Errorf("thread %d consumed %d ns of CPU, want > 0", i, c)
		}
		sum += c
	}
	if r.CPUNs != sum || r.CPUNs <= 0 {
		t.Errorf("cpu_ns = %d, want the per-thread sum %d (> 0)", r.CPUNs, sum)
	}
	if r.WallNs <= 0 || r.CPUNs > int64(k)*r.WallNs+int64(50*time.Millisecond) {
		t.Errorf("cpu_ns %d over wall %d ns for %d threads: impossible", r.CPUNs, r.WallNs, k)
	}
	// The final comes after every thread returned; the process must now
	// be near idle: some 100 ms span (polled, 5 s deadline) in which it
	// used less than half a CPU.
	assertQuiet(t)
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
}

// assertQuiet fails unless, within 5 s, the process spends some 100 ms
// window using less than half a CPU.
func assertQuiet(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c0, w0 := processCPUNs(t), time.Now()
		for time.Since(w0) < 100*time.Millisecond {
			time.Sleep(10 * time.Millisecond) // measurement window, not synchronisation
		}
		used, wall := processCPUNs(t)-c0, time.Since(w0)
		if used < wall.Nanoseconds()/2 {
			return
		}
	}
	t.Errorf("the process kept burning ≥ half a CPU for 5 s after the load's final: threads not stopped")
}

// TestLoadMemPinnedEndsOnDuration: a memory-streaming load pinned to CPU 0
// ends by itself when its duration is over, reporting what it ran.
func TestLoadMemPinnedEndsOnDuration(t *testing.T) {
	s := startSession(t, t.TempDir())
	s.start(agentproto.Start{Endpoint: "mem", Role: agentproto.Load, DurationNs: int64(200 * time.Millisecond),
		Load: &agentproto.LoadSpec{Threads: 1, CPUs: []int{0}, Kind: agentproto.LoadMem, MemMiB: 2}})
	_, f := s.collect("mem")
	if f.Reason != agentproto.EndDuration || f.Load == nil {
		t.Fatalf("final = %+v, want reason duration with a load report", f)
	}
	r := f.Load
	if r.Kind != agentproto.LoadMem || r.MemMiB != 2 || len(r.CPUs) != 1 || r.CPUs[0] != 0 || r.CPUNs <= 0 || r.Work == 0 {
		t.Errorf("load report = %+v", r)
	}
	// The duration bounds the endpoint from its start request (buffer
	// set-up included), so the spinning part is at most that long (plus
	// the time the threads take to see the stop, bounded here at 1 s).
	if r.WallNs <= 0 || r.WallNs > int64(1200*time.Millisecond) {
		t.Errorf("wall %v, want within the 200 ms duration (+1 s to stop)", time.Duration(r.WallNs))
	}
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
}

// TestLoadBadCPUFailsStart: pinning to a CPU the kernel refuses fails the
// start with an error naming the thread, and leaves nothing running.
func TestLoadBadCPUFailsStart(t *testing.T) {
	s := startSession(t, t.TempDir())
	s.send(agentproto.NewStart(agentproto.Start{Endpoint: "bad", Role: agentproto.Load,
		Load: &agentproto.LoadSpec{Threads: 2, CPUs: []int{0, 4095}}}))
	m := s.expect(agentproto.KindError)
	if m.Error.Code != agentproto.CodeStart || m.Error.Endpoint != "bad" {
		t.Fatalf("error = %+v, want a start error of endpoint bad", m.Error)
	}
	assertQuiet(t)
	s.send(agentproto.NewStop(""))
	s.expect(agentproto.KindBye)
}
