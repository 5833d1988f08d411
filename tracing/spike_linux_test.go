package tracing

import (
	"bytes"
	"cmp"
	"flag"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/tracing/tracetest"
)

func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// lockTo locks the goroutine to its thread, pins that to cpu and gives it
// SCHED_FIFO 5 (below the hog's 10), so the endpoints are delayed by the
// hog and not by whatever else loads the machine. The goroutine must exit
// without unlocking so the runtime retires the thread.
func lockTo(t *testing.T, cpu int) bool {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Errorf("pin to CPU %d: %v", cpu, err)
		return false
	}
	// RESET_ON_FORK: the hog process is forked from the sender's thread
	// and its runtime threads must not compete at FIFO 5 on CPU 0.
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 1 /* SCHED_FIFO */, Priority: 5, Flags: 1 /* SCHED_FLAG_RESET_ON_FORK */}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		t.Errorf("SCHED_FIFO 5: %v", err)
		return false
	}
	return true
}

// spikeEmulated says the run is inside an emulated board (vmboard's
// TestVMTraceSpike under TCG), where a vCPU is often late by
// milliseconds: the sender sends late into the hog, the receiver writes
// its marker after the snapshot's 1 ms margin, or a message is late for
// the emulator's sake while the hog ran outside its window. Such an
// attempt says nothing of the tracing and is repeated (up to 10) instead
// of failing; one attempt must still pass every check.
var spikeEmulated = flag.Bool("spike-emulated", false, "in an emulated board: repeat attempts whose timing the emulator spoiled (up to 10)")

func TestMain(m *testing.M) {
	tracetest.RunHogIfChild()
	os.Exit(m.Run())
}

func needTrace(t *testing.T) {
	t.Helper()
	testkit.NeedRoot(t, "tracefs needs root")
}

// TestSpikeSnapshotNamesHog induces a 5 ms SCHED_FIFO hog on the
// receiver's CPU while a message is in flight: the window breaks a 1 ms
// bound, the snapshot holds the hog's occupancy and both markers, the
// explanation names the hog, and the exported JSON is trace-event format.
func TestSpikeSnapshotNamesHog(t *testing.T) {
	needTrace(t)
	// The hog holds the receiver's CPU for 5 ms from when it reports
	// ready; a sender preempted for that long on a loaded host sends after
	// the hog is done, and no spike happens. That says nothing of the
	// tracing, so such an attempt is repeated (at most 3), as is one whose
	// message was sent late into the hog; every check on a spike that did
	// happen is fatal at once.
	attempts := 3
	if *spikeEmulated {
		attempts = 10
	}
	for attempt := 1; attempt <= attempts; attempt++ {
		if trySpike(t) {
			return
		}
	}
	t.Fatalf("the hog did not delay the spike message in %d attempts: spike not induced", attempts)
}

func trySpike(t *testing.T) (induced bool) {
	recvCPU, sendCPU := 0, 0
	if runtime.NumCPU() > 1 {
		recvCPU = 1
	}
	s, err := Arm(Config{CPUs: []int{sendCPU, recvCPU}, BufferKB: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()

	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil { // blocking: the reader sleeps in the kernel on its own thread
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	type recv struct {
		seq  byte
		ns   int64
		tid  int
		fail bool
	}
	got := make(chan recv, 16)
	const msgs = 8
	const spikeSeq = 5
	go func() {
		defer unix.Close(fds[0])
		if !lockTo(t, recvCPU) {
			got <- recv{fail: true}
			return
		}
		tid := unix.Gettid()
		var b [1]byte
		for range msgs {
			if n, err := unix.Read(fds[0], b[:]); n != 1 || err != nil {
				got <- recv{fail: true}
				return
			}
			ns := mono()
			_ = s.MarkSeq("recv", uint64(b[0]))
			got <- recv{seq: b[0], ns: ns, tid: tid}
		}
	}()

	sendDone := make(chan struct{})
	sent := make([]int64, msgs)
	go func() {
		defer close(sendDone)
		if !lockTo(t, sendCPU) {
			return
		}
		for i := range msgs {
			if i == spikeSeq {
				wait, err := tracetest.StartHog(recvCPU, 5*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				defer func() {
					if err := wait(); err != nil {
						t.Errorf("hog: %v", err)
					}
				}()
			}
			sent[i] = mono()
			_ = s.MarkSeq("send", uint64(i))
			if _, err := unix.Write(fds[1], []byte{byte(i)}); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond) // pacing, not synchronisation
		}
	}()
	var rs []recv
	for range msgs {
		select {
		case r := <-got:
			if r.fail {
				t.Fatal("receiver failed")
			}
			rs = append(rs, r)
		case <-time.After(10 * time.Second):
			t.Fatal("receiver stalled")
		}
	}
	<-sendDone

	// The spike message against a 1 ms bound (other messages may be late
	// too on a loaded machine; the one sent while the hog held the
	// receiver's CPU must be).
	const bound = int64(time.Millisecond)
	worst := slices.IndexFunc(rs, func(r recv) bool { return r.seq == spikeSeq })
	worstNs := rs[worst].ns - sent[spikeSeq]
	if worstNs <= bound {
		t.Logf("hog did not delay any message past %v (worst %v): spike not induced", time.Duration(bound), time.Duration(worstNs))
		return false
	}
	// spoiled fails the attempt, or in an emulated board repeats it.
	spoiled := func(format string, args ...any) bool {
		if !*spikeEmulated {
			t.Fatalf(format, args...)
		}
		t.Logf("emulated board, attempt repeated: "+format, args...)
		return false
	}
	// A sender that ran late into the hog's 5 ms breaks the bound but sees
	// only the hog's end: its window cannot hold the ≥3 ms checked below.
	const mostOfHog = int64(4 * time.Millisecond)
	if *spikeEmulated && worstNs <= mostOfHog {
		return spoiled("the spike message waited %v, under %v: sent late into the hog", time.Duration(worstNs), time.Duration(mostOfHog))
	}
	w := rs[worst]
	for _, r := range rs {
		t.Logf("seq %d latency %v", r.seq, time.Duration(r.ns-sent[r.seq]))
	}
	snap, err := s.Snapshot(sent[w.seq], w.ns, int64(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var sawSend, sawRecv, sawHog bool
	for _, e := range snap.Events {
		switch {
		case e.Kind == Marker && e.Text == "hlr send seq="+itoa(int(w.seq)):
			sawSend = true
		case e.Kind == Marker && e.Text == "hlr recv seq="+itoa(int(w.seq)):
			sawRecv = true
		case e.Kind == Switch && e.CPU == recvCPU && (e.NextComm == tracetest.HogComm || e.PrevComm == tracetest.HogComm):
			sawHog = true
		}
	}
	if !sawSend {
		t.Fatalf("snapshot of %d events: no send marker", len(snap.Events))
	}
	if !sawRecv || !sawHog {
		return spoiled("snapshot of %d events: send marker %v, recv marker %v, hog switched in %v", len(snap.Events), sawSend, sawRecv, sawHog)
	}
	// What the raw switches say the hog held, counted here apart from
	// Explain, which is under test.
	const mostOfWindow = int64(3 * time.Millisecond)
	evs := slices.Clone(snap.Events)
	slices.SortStableFunc(evs, func(a, b Event) int { return cmp.Compare(a.Ns, b.Ns) })
	hogNs := hogHeld(evs, recvCPU, sent[w.seq], w.ns)
	if *spikeEmulated && hogNs < mostOfWindow {
		// The message was late, but the switches show the hog held its CPU
		// for only part of it: the emulator stalled a vCPU.
		return spoiled("the switches show the hog on CPU %d for %v of the %v window", recvCPU, time.Duration(hogNs), time.Duration(worstNs))
	}
	x := Explain(snap.Events, Window{CPU: recvCPU, FromNs: sent[w.seq], ToNs: w.ns, WaiterPID: w.tid, Label: "seq " + itoa(int(w.seq))})
	t.Log(x.String())
	if len(x.Ran) == 0 || x.Ran[0].Comm != tracetest.HogComm || x.Ran[0].Ns < mostOfWindow || x.Ran[0].Prio >= 100 {
		t.Fatalf("explanation does not put the RT hog first for ≥3ms: %+v", x.Ran)
	}
	if d := x.Ran[0].Ns - hogNs; d < -hogNs/20 || d > hogNs/20 {
		t.Errorf("explanation credits the hog %v, its switches in the window add up to %v", time.Duration(x.Ran[0].Ns), time.Duration(hogNs))
	}
	if !strings.Contains(x.String(), tracetest.HogComm) || !x.Covered {
		t.Fatalf("summary does not name the hog or window not covered: %s", x)
	}
	// The receiver was woken, then runnable but held off by the hog: it
	// got its CPU from the hog, which held it for the wait. On a real
	// kernel the wake comes microseconds after the send, so the wait is
	// most of the hog's 5 ms; a TCG vCPU can wake it late.
	if x.WokenNs == 0 || x.RunNs <= x.WokenNs {
		t.Fatalf("receiver should be seen woken, then running: woken %d run %d", x.WokenNs, x.RunNs)
	}
	if from := switchedInFrom(snap.Events, recvCPU, w.tid, x.RunNs); from != tracetest.HogComm {
		t.Errorf("receiver got CPU %d at %d from %q, not from the hog", recvCPU, x.RunNs, from)
	}
	if waited, held := x.RunNs-x.WokenNs, hogHeld(evs, recvCPU, x.WokenNs, x.RunNs); held < waited*9/10 {
		t.Errorf("receiver runnable for %v, the hog held its CPU for %v of it", time.Duration(waited), time.Duration(held))
	}
	if !*spikeEmulated && x.RunNs-x.WokenNs < int64(2*time.Millisecond) {
		t.Errorf("receiver should be runnable-but-waiting ≥2ms: woken %d run %d", x.WokenNs, x.RunNs)
	}

	var buf bytes.Buffer
	if err := WriteChrome(&buf, snap.Events); err != nil {
		t.Fatal(err)
	}
	checkChrome(t, buf.Bytes(), tracetest.HogComm, "hlr send seq="+itoa(int(w.seq)))
	return true
}

// hogHeld is how long the hog held cpu within [from, to], in ns, from the
// trace alone: from each switch to it, or its wake-up onto cpu (the
// kernel records no switch out of idle on some CPUs), up to the next
// switch away from it; from `from` if the first seen is a switch away.
// events must be in time order.
func hogHeld(events []Event, cpu int, from, to int64) int64 {
	var held int64
	clip := func(a, b int64) int64 { return max(0, min(b, to)-max(a, from)) }
	since := from // when the hog went on cpu, while on
	on, switched := false, false
	for _, e := range events {
		switch {
		case e.Kind == Wakeup && e.TargetCPU == cpu && e.NextComm == tracetest.HogComm && !on:
			on, since = true, e.Ns
		case e.Kind == Switch && e.CPU == cpu:
			if e.PrevComm == tracetest.HogComm && (on || !switched) {
				held += clip(since, e.Ns)
			}
			on, since, switched = e.NextComm == tracetest.HogComm, e.Ns, true
		}
	}
	if on {
		held += clip(since, to)
	}
	return held
}

// switchedInFrom is the comm of the task that left cpu when pid entered
// it at ns, "" if no such switch is in events.
func switchedInFrom(events []Event, cpu, pid int, ns int64) string {
	for _, e := range events {
		if e.Kind == Switch && e.CPU == cpu && e.NextPID == pid && e.Ns == ns {
			return e.PrevComm
		}
	}
	return ""
}

func itoa(i int) string { return string(AppendMarker(nil, "", uint64(i))[len("hlr  seq="):]) }
