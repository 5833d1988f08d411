package gpio_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
)

const (
	childEnv   = "HILRIG_GPIO_TEST_CHILD" // "mark|hold <spec> <count>"
	crossEdges = 10000
)

// childMain is process A of the cross-process test: it marks count edges
// on the line and exits.
func childMain() int {
	var mode, spec string
	var count int
	if _, err := fmt.Sscanf(os.Getenv(childEnv), "%s %s %d", &mode, &spec, &count); err != nil {
		fmt.Fprintln(os.Stderr, "child: bad", childEnv, err)
		return 2
	}
	ls, err := gpio.ParseLineSpec(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	m, err := gpio.Open(context.Background(), ls, gpio.Mode{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	if mode == "hold" {
		// Hold the line until killed: the parent tests crash recovery.
		fmt.Println("holding")
		select {}
	}
	for range count {
		if err := m.Mark(); err != nil {
			fmt.Fprintln(os.Stderr, "child: mark:", err)
			return 1
		}
	}
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child: close:", err)
		return 1
	}
	return 0
}

// TestCrossProcess: process A (this test binary re-executed) marks 10,000
// edges on a simulated line; process B (this test) captures all of them,
// in order, with strictly increasing CLOCK_MONOTONIC timestamps.
func TestCrossProcess(t *testing.T) {
	sim := gpiotest.NewSim(t, gpiosim.Config{Lines: 2, RingSize: 16384})
	spec := gpio.LineSpec{Chip: sim.Chip(), Line: "1", Consumer: "proc-a"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := gpio.Watch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	start := gpio.MonotonicNs()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=mark "+spec.String()+" "+strconv.Itoa(crossEdges))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := make(chan error, 1)
	go func() { childDone <- cmd.Wait() }()

	buf := make([]gpio.Edge, 256)
	var got int
	var prev int64 = start
	for got < crossEdges {
		n, err := w.ReadEdges(ctx, buf)
		if err != nil {
			t.Fatalf("after %d edges: %v", got, err)
		}
		for _, e := range buf[:n] {
			got++
			if e.LineSeqno != uint64(got) || e.Seqno != uint64(got) || e.Line != 1 || e.Rising != (got%2 == 1) {
				t.Fatalf("edge %d = %v: want line 1, seq %d, rising=%v", got, e, got, got%2 == 1)
			}
			if e.TimestampNs <= prev {
				t.Fatalf("edge %d timestamp %d not after the previous %d", got, e.TimestampNs, prev)
			}
			prev = e.TimestampNs
		}
	}
	if err := <-childDone; err != nil {
		t.Fatalf("marking process: %v", err)
	}
	if now := gpio.MonotonicNs(); prev > now {
		t.Fatalf("last edge at %d is in the future of this process's CLOCK_MONOTONIC %d", prev, now)
	}
	if w.Dropped() != 0 {
		t.Fatalf("dropped %d edges", w.Dropped())
	}
	// Nothing beyond the 10,000.
	short, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	var extra gpio.Edge
	if err := w.ReadEdge(short, &extra); err == nil {
		t.Fatalf("edge %v beyond the %d marked", extra, crossEdges)
	}
	t.Logf("captured %d edges from another process over %.1f ms", got, float64(prev-start)/1e6)
}

// TestStaleOwnerReclaimed: a line held by a process that was killed
// (no Close) shows as busy while it lives and is free once it is dead.
func TestStaleOwnerReclaimed(t *testing.T) {
	sim := gpiotest.NewSim(t, gpiosim.Config{Lines: 1})
	spec := gpio.LineSpec{Chip: sim.Chip(), Line: "0", Consumer: "doomed-proc"}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=hold "+spec.String()+" 0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "holding\n" {
		t.Fatalf("child did not report holding the line: %q, %v", line, err)
	}
	_, err = gpio.Open(context.Background(), gpio.LineSpec{Chip: sim.Chip(), Line: "0"}, gpio.Mode{})
	if !errors.Is(err, gpio.ErrBusy) || !strings.Contains(err.Error(), `"doomed-proc"`) {
		t.Fatalf("request while the child holds the line: %v, want ErrBusy naming doomed-proc", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // reaped: the PID no longer names a live process
	if li, _ := sim.C.LineInfo(0); li.Used {
		t.Fatalf("line of the killed child still shown as used: %+v", li)
	}
	m, err := gpio.Open(context.Background(), gpio.LineSpec{Chip: sim.Chip(), Line: "0"}, gpio.Mode{})
	if err != nil {
		t.Fatalf("request of a line whose owner was killed: %v", err)
	}
	m.Close()
}
