package rig_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

// TestPTPProbeRealPTP4L runs a real linuxptp grandmaster and slave in two
// namespaces (ptprig) and the slave board's agent inside the slave's
// namespace. The controller never touches the socket: the agent probes
// it and streams samples back. A probe of a missing socket fails at once
// naming board and socket; the Monitor fed by the real socket's probe
// sees the board locked; after the slave ptp4l is SIGKILLed, the samples
// carry the read error naming board and socket, the board is unlocked
// and a window spanning the kill is judged not locked.
func TestPTPProbeRealPTP4L(t *testing.T) {
	if err := ptprig.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err := ptprig.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pr.Close() })
	rack, err := fixtures.ParseRack("ptp-probe.yaml", []byte(fmt.Sprintf(`name: ptp-probe
boards:
  - name: slave
    reach: netns:%s
    clock: {ptp4l_socket: %s}
`, pr.Pair.B.Name, pr.SlaveSocket)))
	if err != nil {
		t.Fatal(err)
	}
	r := openRig(ctx, t, rack, &rig.Options{Binary: hilrigBin})
	a, err := r.Agent(ctx, "slave")
	if err != nil {
		t.Fatal(err)
	}

	missing := filepath.Join(pr.Dir, "nobody.sock")
	if p, err := a.StartPTPProbe(ctx, missing, &rig.PTPProbeOptions{Period: 100 * time.Millisecond}); !errors.Is(err, rig.ErrPTPProbe) ||
		!strings.Contains(err.Error(), "board slave") || !strings.Contains(err.Error(), missing) {
		if p != nil {
			_ = p.Close()
		}
		t.Fatalf("probe of a missing socket: %v, want ErrPTPProbe naming board slave and %s", err, missing)
	}

	// Sync comes every second (logSyncInterval 0): polls 1.1 s apart each
	// see a fresh ingress; the Monitor polls a little faster and so
	// follows the agent sample by sample.
	const period = 1100 * time.Millisecond
	p, err := a.StartPTPProbe(ctx, pr.SlaveSocket, &rig.PTPProbeOptions{Period: period})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	mon, err := timesync.NewMonitor([]timesync.Board{{Name: "slave", Source: p, ExpectedGM: pr.GMIdentity}},
		timesync.MonitorConfig{Period: period - period/20, Bound: 100 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mon.Stop)
	poll := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !cond() {
			if time.Now().After(deadline) {
				s, _ := mon.Series("slave")
				t.Fatalf("%s: not within %v; series %+v", what, within, s)
			}
			time.Sleep(50 * time.Millisecond) // polling with a deadline
		}
	}
	locked := func() bool { l, _, _ := mon.Locked("slave"); return l }
	poll("slave locked via the agent's probe", 30*time.Second, locked)
	s, _ := mon.Series("slave")
	last := s[len(s)-1]
	if last.State != timesync.PortStateSlave || last.GM != pr.GMIdentity || last.PathDelay <= 0 {
		t.Errorf("locked sample %+v: want SLAVE following %s with a measured path delay", last, pr.GMIdentity)
	}
	// Board time: the agent's CLOCK_REALTIME is this machine's.
	if d := time.Since(last.At); d < 0 || d > 3*period {
		t.Errorf("sample stamped %v ago, want within the last 3 periods", d)
	}
	lockedAt := last.At

	if err := pr.KillDaemon(ctx, ptprig.Slave); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var gone timesync.Sample
	poll("a sample saying the socket is gone", 4*period+2*time.Second, func() bool {
		s, _ := mon.Series("slave")
		for _, x := range s {
			if x.Err != "" && x.At.After(killed) {
				gone = x
				return true
			}
		}
		return false
	})
	if !strings.Contains(gone.Err, "board slave") || !strings.Contains(gone.Err, pr.SlaveSocket) {
		t.Errorf("error sample %q: want it to name board slave and %s", gone.Err, pr.SlaveSocket)
	}
	if gone.Locked || locked() {
		t.Error("board still locked after its ptp4l was killed")
	}
	q, err := mon.Window(lockedAt, gone.At, "slave")
	if err != nil {
		t.Fatal(err)
	}
	if q.Locked {
		t.Errorf("window across the kill judged locked: %+v", q)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := p.Close(); !errors.Is(err, timesync.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}
