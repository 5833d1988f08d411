package steps_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy/sshdtest"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/suites/internal/harness"
	"github.com/hilrig/hilrig/suites/internal/steps"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
	"github.com/hilrig/hilrig/timesync/timesyncsim"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

func window(ep string, ix uint64, from, to time.Time, n int64, ns int64) agentproto.Window {
	h := report.NewHistogram()
	h.RecordN(ns, n)
	return agentproto.Window{Endpoint: ep, Index: ix, StartNs: from.UnixNano(), EndNs: to.UnixNano(), Received: uint64(n), Latency: h}
}

// TestGateWindows scripts board-a's ptp4l through locked (offset 300 ns),
// unlocked (LISTENING, 50 µs) and locked again (700 ns) while board-b
// stays locked at -200 ns, then feeds windows placed on the Monitor's own
// polls: the windows touching an unlocked poll (or starting before the
// first poll) are excluded with exactly their samples, the rest merged,
// and the uncertainty is the largest included bound, 700+200 ns.
func TestGateWindows(t *testing.T) {
	a := timesyncsim.New(&timesyncsim.Options{Initial: &timesyncsim.State{PortState: timesync.PortStateSlave,
		GM: timesyncsim.DefaultGM, GMPresent: true, MeanPathDelay: 2 * time.Microsecond, StepsRemoved: 1, Offset: 300}})
	bst := timesyncsim.Locked()
	bst.Offset = -200
	b := timesyncsim.New(&timesyncsim.Options{Identity: 0x02000afffee90003, Initial: &bst})
	mon := startMonitor(t, []timesync.Board{{Name: "board-a", Source: a}, {Name: "board-b", Source: b}})
	// polls returns the times of board's polls with that lock and offset
	// after t.
	polls := func(board string, locked bool, off time.Duration, after time.Time) []time.Time {
		s, err := mon.Series(board)
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Time
		for _, x := range s {
			if x.Locked == locked && x.Offset == off && x.At.After(after) {
				out = append(out, x.At)
			}
		}
		return out
	}
	// board-b's first poll is unlocked (nothing to compare ingress with):
	// the scripted windows start once it is locked.
	waitFor(t, "board-b locked", func() bool { return len(polls("board-b", true, -200, time.Time{})) >= 1 })
	bLocked := polls("board-b", true, -200, time.Time{})[0]
	waitFor(t, "4 locked polls at 300ns", func() bool { return len(polls("board-a", true, 300, bLocked)) >= 4 })
	a.Update(func(s *timesyncsim.State) { s.PortState, s.Offset = timesync.PortStateListening, 50*time.Microsecond })
	waitFor(t, "3 unlocked polls", func() bool { return len(polls("board-a", false, 50*time.Microsecond, bLocked)) >= 3 })
	a.Update(func(s *timesyncsim.State) { s.PortState, s.Offset = timesync.PortStateSlave, 700 })
	waitFor(t, "4 locked polls at 700ns", func() bool { return len(polls("board-a", true, 700, bLocked)) >= 4 })
	// board-b must also have polled after the last window ends.
	tEnd := time.Now()
	waitFor(t, "board-b polled after the script", func() bool { return len(polls("board-b", true, -200, tEnd)) >= 1 })
	mon.Stop()

	sa, _ := mon.Series("board-a")
	lock300 := polls("board-a", true, 300, bLocked)
	unl := polls("board-a", false, 50*time.Microsecond, bLocked)
	lock700 := polls("board-a", true, 700, bLocked)
	// Consecutive locked polls of one run: nothing unlocked between them.
	wins := [][]agentproto.Window{{
		window("sub0", 0, sa[0].At.Add(-time.Second), sa[0].At, 11, 5_000), // before the first poll: excluded
		window("sub0", 1, lock300[0], lock300[2], 100, 10_000),
		window("sub0", 2, lock300[len(lock300)-1], lock700[0], 37, 1_000_000), // spans the unlocked polls: excluded
		window("sub0", 3, unl[0], unl[1], 5, 2_000_000),                       // inside them: excluded
		window("sub0", 4, lock700[1], lock700[3], 50, 20_000),
	}, {
		window("sub1", 0, lock300[1], lock300[3], 7, 15_000),
	}}
	finals := []*agentproto.Final{{Endpoint: "sub0", Latency: report.NewHistogram()}, {Endpoint: "sub1", Latency: report.NewHistogram()}}
	for i, ws := range wins {
		for _, w := range ws {
			finals[i].Latency.Merge(w.Latency)
		}
	}
	c := &report.Case{Histogram: finals[0].Latency.Clone(), Excluded: 2}
	c.Histogram.Merge(finals[1].Latency)
	res, err := steps.GateWindows(c, wins, finals, mon, "board-a", "board-b")
	if err != nil {
		t.Fatal(err)
	}
	if res.Windows != 6 || res.ExcludedWindows != 3 || res.ExcludedSamples != 11+37+5 {
		t.Errorf("gate %+v: want 6 windows, 3 excluded, 53 samples", res)
	}
	if c.Excluded != 2+53 {
		t.Errorf("Case.Excluded = %d, want 55 (2 before + 53)", c.Excluded)
	}
	if c.Method.UncertaintyNs != 900 {
		t.Errorf("UncertaintyNs = %d, want 900 (700 + 200)", c.Method.UncertaintyNs)
	}
	if s := c.Histogram.Summary(); s.Count != 157 || s.Max >= 1_000_000 {
		t.Errorf("gated histogram %+v: want the 157 included samples, none of the excluded ≥1ms ones", s)
	}
	if n := c.Notes; len(n) != 1 || !strings.Contains(n[0], "3 of 6 window(s) not locked") || !strings.Contains(n[0], "53 sample(s) excluded") || !strings.Contains(n[0], "±900ns") {
		t.Errorf("notes %q: want the exclusion and the uncertainty recorded", n)
	}

	// A window missing from the buffer: nothing can be vetted, c untouched.
	finals[1].Latency.RecordN(1, 3)
	c2 := &report.Case{Histogram: report.NewHistogram()}
	if _, err := steps.GateWindows(c2, wins, finals, mon, "board-a", "board-b"); !errors.Is(err, steps.ErrGateIncomplete) {
		t.Errorf("incomplete windows: %v, want ErrGateIncomplete", err)
	}
	if c2.Excluded != 0 || len(c2.Notes) != 0 {
		t.Errorf("failed gate changed the case: %+v", c2)
	}
	// An unknown board is an error naming it.
	if _, err := steps.GateWindows(&report.Case{}, wins, nil, mon, "board-z"); err == nil || !strings.Contains(err.Error(), "board-z") {
		t.Errorf("unknown board: %v", err)
	}
}

// gateAfterFault runs a Monitor (2 ms polls, policy) on two fake boards,
// waits until board-a has been locked twice, applies fault to board-a and
// waits for 3 polls that faulty accepts, then gates two windows of
// board-a: one over its locked polls (10 samples), one over the faulty
// ones (4 samples). It returns what the gate did and the case.
func gateAfterFault(t *testing.T, policy timesync.LockPolicy, fault func(*timesyncsim.State), faulty func(timesync.Sample) bool) (steps.GateResult, *report.Case) {
	t.Helper()
	a := timesyncsim.New(&timesyncsim.Options{Initial: ptr(timesyncsim.Locked())})
	b := timesyncsim.New(&timesyncsim.Options{Identity: 0x02000afffee90003, Initial: ptr(timesyncsim.Locked())})
	mon := startMonitor(t, []timesync.Board{{Name: "board-a", Source: a, Policy: policy}, {Name: "board-b", Source: b, Policy: policy}})
	times := func(board string, f func(timesync.Sample) bool) (at []time.Time) {
		s, _ := mon.Series(board)
		for _, x := range s {
			if f(x) {
				at = append(at, x.At)
			}
		}
		return at
	}
	locked := func(x timesync.Sample) bool { return x.Locked }
	// The window that must be included starts after board-b is locked
	// (its first poll is not: nothing to compare ingress with).
	waitFor(t, "board-b locked", func() bool { return len(times("board-b", locked)) >= 1 })
	lb := times("board-b", locked)
	after := func(x timesync.Sample) bool { return x.Locked && x.At.After(lb[0]) }
	waitFor(t, "board-a locked twice after", func() bool { return len(times("board-a", after)) >= 2 })
	a.Update(fault)
	waitFor(t, "3 faulty polls", func() bool { return len(times("board-a", faulty)) >= 3 })
	tEnd := time.Now()
	waitFor(t, "board-b polled after", func() bool { at := times("board-b", locked); return at[len(at)-1].After(tEnd) })
	mon.Stop()
	la, fa := times("board-a", after), times("board-a", faulty)
	wins := [][]agentproto.Window{{
		window("sub0", 0, la[0], la[1], 10, 10_000),
		window("sub0", 1, fa[0], fa[2], 4, 10_000),
	}}
	c := &report.Case{}
	res, err := steps.GateWindows(c, wins, nil, mon, "board-a", "board-b")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExcludedWindows != 1 || res.ExcludedSamples != 4 {
		t.Errorf("gate %+v: want window 1 (4 samples) excluded", res)
	}
	return res, c
}

// TestGateWindowsNamesReadError: when a board's ptp4l cannot be read (as
// an agent-side probe reports a socket gone), the windows touching those
// polls are excluded and the case's note carries the read error itself,
// naming board and socket, not only "read error".
func TestGateWindowsNamesReadError(t *testing.T) {
	const gone = "board board-a: ptp4l socket /run/board-a/ptp4l: timesync: no socket"
	res, c := gateAfterFault(t, timesync.LockPolicy{}, func(s *timesyncsim.State) { s.Err = errors.New(gone) },
		func(x timesync.Sample) bool { return x.Err != "" })
	if !strings.Contains(res.FirstReason, gone) || len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "/run/board-a/ptp4l") {
		t.Errorf("reason %q, notes %q: want the read error naming board-a and its socket", res.FirstReason, c.Notes)
	}
}

// TestGateWindowsNamesRefusedGrandmaster: on the sim rack (which accepts
// clockClass 248, its free-running ptp4l grandmaster's) board-a's
// grandmaster drops to clockClass 52 mid-run. The windows over those
// polls are excluded and the case's note says why: the class refused,
// with the values, not only that the window was not locked.
func TestGateWindowsNamesRefusedGrandmaster(t *testing.T) {
	rack, err := fixtures.SimRackFor(fixtures.SimEnv{Root: true, PTP4L: true})
	if err != nil {
		t.Fatal(err)
	}
	policy := steps.PTPPolicy(rack)
	if len(policy.GMClasses) != 1 || policy.GMClasses[0] != 248 {
		t.Fatalf("sim rack policy %+v: want grandmaster classes [248]", policy)
	}
	_, c := gateAfterFault(t, policy, func(s *timesyncsim.State) { s.GMQuality.Class = 52 },
		func(x timesync.Sample) bool { return x.Cond == timesync.CondGMClassRefused })
	for _, want := range []string{"gm-class-refused", "clockClass 52 refused", "the rack accepts 248"} {
		if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], want) {
			t.Errorf("notes %q: want the refusal said (%q)", c.Notes, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestMeasureGatesSSHBoardThroughAgentProbe: a real linuxptp pair
// (ptprig), a real OpenSSH server on loopback standing in for a remote
// board "far" (so far is on another "host" and its one-way samples must
// be PTP-gated), and "near", a local board. far's ptp4l socket is read
// only by far's agent (deployed over SSH); near's directly. A UDP flow
// far → near measured while the slave is locked is gated and at least
// one window is included (the uncertainty is the monitored bound); after
// the ptp4l is SIGKILLed, the next gated measurement fails with
// ErrPTPGate naming board far and its socket.
func TestMeasureGatesSSHBoardThroughAgentProbe(t *testing.T) {
	if err := ptprig.Available(); err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("needs Debian's openssh-server (apt-get install -y openssh-server)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // may build hilrig
	defer cancel()
	pr, err := ptprig.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pr.Close() })
	sd := sshdtest.Loopback(t)
	rack, err := fixtures.ParseRack("ptp-ssh.yaml", []byte(fmt.Sprintf(`name: ptp-ssh
capabilities: [ptp]
boards:
  - name: far
    reach: ssh://root@%s
    ssh: {key_file: %s, known_hosts: %s, remote_dir: %s}
    clock: {stamp: realtime, ptp4l_socket: %s}
  - name: near
    reach: local
    clock: {stamp: realtime, ptp4l_socket: %s}
links:
  - {name: far-near-udp, a: far, b: near, transport: udp, a_addr: 127.0.0.1, b_addr: 127.0.0.1}
ptp: {grandmaster: external, max_offset: 100us}
bounds:
  - name: loose
    entries:
      - {transport: udp, payload: 64, p50: 1s, p99: 2s, p999: 3s, max: 5s, max_lost: 0}
`, sd.Addr, sd.ClientKey, sd.KnownHosts, filepath.Join(sd.Dir, "remote-bin"), pr.SlaveSocket, pr.SlaveSocket)))
	if err != nil {
		t.Fatal(err)
	}
	prof, err := rack.Profile("loose")
	if err != nil {
		t.Fatal(err)
	}
	tc := &harness.TestContext{Suite: "test", Rack: rack, Profile: prof, Config: &fixtures.Config{Window: 5 * time.Second}}
	// steps.Open takes the rack's lease (a lab rack): in a directory of
	// the test's, not the machine's.
	t.Setenv("HILRIG_LEASE_DIR", t.TempDir())
	env, err := steps.Open(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Rig.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if _, err := env.Rig.Agent(ctx, "far"); err != nil { // deploy over SSH while ptp4l locks
		t.Fatal(err)
	}
	src, err := timesync.DialPTP4L(ctx, pr.SlaveSocket, nil)
	if err != nil {
		t.Fatal(err)
	}
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	err = timesync.RequireLocked(lctx, []timesync.Board{{Name: "slave", Source: src}}, 100*time.Microsecond, 2, nil)
	lcancel()
	_ = src.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Windows of 5 s: the gate polls every 1.25 s, longer than the Sync
	// interval (1 s), so every locked poll sees a fresh Sync.
	p := steps.Params{Path: steps.UDP, Payload: 64, RateHz: 200, Count: 1200, Window: 5 * time.Second}
	run, err := steps.Measure(ctx, env, "udp 64B gated", p)
	if err != nil {
		t.Fatalf("gated measurement: %v\n%s", err, steps.Diagnostics(env))
	}
	c := run.Case
	if c.Failure != "" {
		t.Fatalf("case failed: %s\n%s", c.Failure, steps.Diagnostics(env))
	}
	var note string
	for _, n := range c.Notes {
		if strings.HasPrefix(n, "PTP gate:") {
			note = n
		}
		if strings.Contains(n, "NOT PTP-gated") {
			t.Errorf("case not gated: %s", n)
		}
	}
	if note == "" || !strings.Contains(note, "far and near") || !strings.Contains(c.Method.Clocks, "gated") {
		t.Fatalf("notes %q, clocks %q: want the PTP gate's note on far and near", c.Notes, c.Method.Clocks)
	}
	if c.Method.UncertaintyNs <= 0 || c.Histogram == nil || c.Histogram.Count() == 0 {
		t.Errorf("no window included (uncertainty %d ns, %v samples): %s", c.Method.UncertaintyNs, c.Histogram, note)
	}
	t.Logf("locked run: %s", note)

	if err := pr.KillDaemon(ctx, ptprig.Slave); err != nil {
		t.Fatal(err)
	}
	_, err = steps.Measure(ctx, env, "udp 64B ptp4l gone", p)
	if !errors.Is(err, steps.ErrPTPGate) || !strings.Contains(err.Error(), "board far") || !strings.Contains(err.Error(), pr.SlaveSocket) {
		t.Fatalf("measurement with far's ptp4l gone: %v, want ErrPTPGate naming board far and %s", err, pr.SlaveSocket)
	}
	t.Logf("ptp4l gone: %v", err)
}

// startMonitor starts a lock monitor of boards polling every 2 ms with a
// 10 µs bound, stopped when the test ends.
func startMonitor(t *testing.T, boards []timesync.Board) *timesync.Monitor {
	t.Helper()
	mon, err := timesync.NewMonitor(boards, timesync.MonitorConfig{Period: 2 * time.Millisecond, Bound: 10 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mon.Stop)
	return mon
}
