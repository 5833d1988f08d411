package soakrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/deploy/deploytest"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/report/soak"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// agentBinary builds the hilrig binary the rig tests' agents run, once
// per test binary (TestMain removes it).
func agentBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "hilrig-soakrun-test-"); binErr == nil {
			binPath, _, binErr = deploytest.Build(binDir)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// recoveryRack is two local-process boards joined by shared memory;
// board-b has a command power driver whose cycle script records each
// cycle in cycles (the rig has killed the hung agent by then; the next
// agent is the board "powered on" again). board-b has no power block
// when power is false.
func recoveryRack(t *testing.T, power bool) (*fixtures.Rack, string) {
	t.Helper()
	dir := t.TempDir()
	cycles := filepath.Join(dir, "cycles")
	script := filepath.Join(dir, "pdu.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$1\" >> "+cycles+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pw := ""
	if power {
		pw = "    power: {driver: command, on: [" + script + ", on], off: [" + script + ", off], cycle: [" + script + ", cycle], off_time: 10ms, timeout: 5s}\n"
	}
	yaml := "name: recovery\nboards:\n  - name: board-a\n    reach: local\n  - name: board-b\n    reach: local\n" + pw +
		"links:\n  - {name: a-b-shm, a: board-a, b: board-b, transport: shm}\n"
	path := filepath.Join(dir, "rack.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	rack, err := fixtures.LoadRack(path)
	if err != nil {
		t.Fatal(err)
	}
	return rack, cycles
}

// runRigSoak runs a 12 s soak of one shm flow board-a → board-b on a
// real rig, SIGSTOPs board-b's agent (a hung board) once 3 windows are
// durable, and returns the checkpoint and Run's error.
func runRigSoak(t *testing.T, power bool, budget int) (lg *soak.Log, cycles string, took time.Duration, runErr error) {
	t.Helper()
	rack, cycles := recoveryRack(t, power)
	hang := func(r *rig.Rig, board string) error {
		a, err := r.Agent(context.Background(), board)
		if err != nil {
			return err
		}
		// A hung board: its agent stops answering, the process stays.
		return syscall.Kill(a.PID(), syscall.SIGSTOP)
	}
	lg, took, runErr = soakWithHang(t, rack, "board-a", "board-b", 12*time.Second, time.Second, budget, hang)
	return lg, cycles, took, runErr
}

// soakWithHang runs a soak of length d of one shm flow (or, on vm
// boards, udp) from → to on rack, calls hang on board to once 3 windows
// are durable, and returns the checkpoint and Run's error. As in the
// soak suite, a panic or oops on a captured console loses the board at
// once (boards without a capture have none).
func soakWithHang(t *testing.T, rack *fixtures.Rack, from, to string, d, heartbeat time.Duration, budget int,
	hang func(r *rig.Rig, board string) error) (lg *soak.Log, took time.Duration, runErr error) {
	t.Helper()
	bin := agentBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Minute)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: bin, MaxWindows: 1024, ConsoleDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("rig Close: %v", err)
		}
	})
	link := rack.Links[0]
	plan := &soakrun.Plan{Window: time.Second, AgentWindow: 100 * time.Millisecond,
		Flows: []soakrun.Flow{{Name: string(link.Transport) + "-64B-200Hz-0", Transport: link.Transport, Link: link.Name, Payload: 64, RateHz: 200}}}
	// Agents first (a vm board boots), so the soak's clock starts with
	// traffic running.
	for _, b := range []string{from, to} {
		if _, err := r.Agent(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	until := time.Now().Add(d)
	feed, tracks, err := soakrun.StartRig(ctx, r, plan, until)
	if err != nil {
		t.Fatal(err)
	}
	feed.Until = until
	cp, path := newCheckpoint(t, soak.Header{Name: "rig recovery", Window: plan.Window})
	stopped := false
	run := &soakrun.Runner{Name: "rig recovery", Window: plan.Window, Drain: 100 * time.Millisecond, Progress: time.Hour, Until: until,
		Checkpoint: cp, Heartbeat: heartbeat, Recoverer: feed, Finisher: feed, Recoveries: budget,
		ConsoleTail: soakrun.ConsoleTail(r.Console, 40), ConsolePanic: soakrun.ConsolePanic(r.Console),
		OnWindow: func(w *soak.Window) {
			if w.Index == 2 && !stopped {
				stopped = true
				if err := hang(r, to); err != nil {
					t.Errorf("hanging %s: %v", to, err)
				}
			}
		}}
	start := time.Now()
	runErr = run.Run(ctx, tracks)
	took = time.Since(start)
	if !stopped {
		t.Fatal("the soak closed no third window: board-b was never stopped")
	}
	lg = readLog(t, path)
	return lg, took, runErr
}

// TestRigSoakRecoversHungProcessBoard: the recovery path on a real rig
// in the normal test run. board-b's agent is SIGSTOPped mid-soak; the
// soak notices within its heartbeat budget, power-cycles board-b through
// its command driver (the script runs once), redeploys its agent,
// resumes its subscriber and runs to its end; the checkpoint holds
// exactly one fault window naming board-b, and traffic is delivered
// after it.
func TestRigSoakRecoversHungProcessBoard(t *testing.T) {
	lg, cycles, _, err := runRigSoak(t, true, 2)
	if err != nil {
		t.Fatalf("soak: %v; want it to survive board-b's hang", err)
	}
	raw, _ := os.ReadFile(cycles)
	if got := strings.Fields(string(raw)); len(got) != 1 || got[0] != "cycle" {
		t.Errorf("power script calls %q, want one cycle", got)
	}
	fw := faultWindows(lg)
	if len(fw) != 1 {
		t.Fatalf("%d fault windows, want exactly 1", len(fw))
	}
	f := fw[0].Fault
	if f.Board != "board-b" || !strings.Contains(f.Cause, "sent no agent window") || !strings.Contains(f.Recovery, "power-cycled (recovery 1 of 2)") {
		t.Errorf("fault %+v: want board-b, the heartbeat cause, power-cycled 1 of 2", f)
	}
	if d := f.To.Sub(f.From); d > 30*time.Second {
		t.Errorf("recovery took %v", d)
	}
	var after int64
	for _, w := range lg.Windows {
		if w.Index <= fw[0].Index {
			continue
		}
		for _, a := range w.Agents {
			for _, s := range a.Streams {
				after += s.Delivered
				if s.Lost != 0 {
					t.Errorf("window %d after the recovery: %s lost %d", w.Index, s.Stream, s.Lost)
				}
			}
		}
	}
	if after == 0 {
		t.Error("nothing delivered after the fault window: board-b's subscriber did not resume")
	}
}

// TestRigSoakWithoutPowerFailsNamingBoard: the same hang on a board
// without power control stops the soak promptly, naming the board.
func TestRigSoakWithoutPowerFailsNamingBoard(t *testing.T) {
	lg, _, took, err := runRigSoak(t, false, 2)
	if !errors.Is(err, soakrun.ErrBoardLost) || !strings.Contains(err.Error(), "board board-b") || !strings.Contains(err.Error(), "no power control") {
		t.Fatalf("soak: %v; want ErrBoardLost naming board-b without power control", err)
	}
	if took > 9*time.Second {
		t.Errorf("the soak ran %v: want it stopped soon after the hang, not at its 12 s end", took)
	}
	if n := len(faultWindows(lg)); n != 0 {
		t.Errorf("%d fault windows, want none", n)
	}
}
