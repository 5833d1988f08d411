package soakrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// vmRecoveryRack is two QEMU boards on one segment with a udp link;
// board vm-b has the vm power driver and its console captured. Its power
// timeout covers a fresh QEMU's boot under TCG on two loaded cores: 8 s
// was exceeded at load ≈17 (the cycle's 2 s of unanswered QMP, the kill,
// the boot).
func vmRecoveryRack(t *testing.T) *fixtures.Rack {
	t.Helper()
	y := fmt.Sprintf(`name: vmrec%d
boards:
  - name: vm-a
    reach: vm
    vm: {segment: s, ip: 10.233.9.1/24}
  - name: vm-b
    reach: vm
    vm: {segment: s, ip: 10.233.9.2/24}
    power: {driver: vm, timeout: 30s}
    console: {device: vm}
links:
  - {name: a-b-udp, a: vm-a, b: vm-b, transport: udp, a_addr: 10.233.9.1, b_addr: 10.233.9.2}
`, os.Getpid())
	rack, err := fixtures.ParseRack("vmrec.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return rack
}

// TestVMSoakRecoversFrozenBoard: a QEMU board frozen mid-soak (SIGSTOP of
// its QEMU process) is detected within the heartbeat budget,
// power-cycled through the vm driver (QMP unanswered: killed after the
// bounded wait, booted again), its agent redeployed and its subscriber
// resumed; the checkpoint holds exactly one fault window with the
// board's console tail. With a budget of 0 the same freeze fails the
// soak naming the board and the exhausted budget. Boots QEMU boards:
// HILRIG_VM=1 (the first run builds the board kernel: minutes).
func TestVMSoakRecoversFrozenBoard(t *testing.T) {
	if os.Getenv("HILRIG_VM") != "1" {
		t.Skip("VM test: set HILRIG_VM=1 to boot two QEMU boards (needs qemu-system-x86, linux-source-6.1, busybox-static)")
	}
	freeze := func(r *rig.Rig, board string) error {
		pid := r.VMPID(board)
		if pid == 0 {
			return fmt.Errorf("board %s: no QEMU process", board)
		}
		return syscall.Kill(pid, syscall.SIGSTOP)
	}
	t.Run("recovered", func(t *testing.T) {
		lg, _, err := soakWithHang(t, vmRecoveryRack(t), "vm-a", "vm-b", 90*time.Second, 5*time.Second, 1, freeze)
		if err != nil {
			t.Fatalf("soak: %v; want it to survive vm-b's freeze", err)
		}
		fw := faultWindows(lg)
		if len(fw) != 1 {
			t.Fatalf("%d fault windows, want exactly 1", len(fw))
		}
		f := fw[0].Fault
		if f.Board != "vm-b" || !strings.Contains(f.Cause, "sent no agent window") || f.Console == "" {
			t.Errorf("fault %+v: want vm-b, the heartbeat cause and its console tail", f)
		}
		if deliveredAfter(lg, fw[0].Index) == 0 {
			t.Error("nothing delivered after the fault window: vm-b's subscriber did not resume")
		}
	})
	t.Run("budget exhausted", func(t *testing.T) {
		_, took, err := soakWithHang(t, vmRecoveryRack(t), "vm-a", "vm-b", 90*time.Second, 5*time.Second, 0, freeze)
		if !errors.Is(err, soakrun.ErrBoardLost) || !strings.Contains(err.Error(), "board vm-b") || !strings.Contains(err.Error(), "recovery budget exhausted") {
			t.Fatalf("soak: %v; want ErrBoardLost naming vm-b and the exhausted budget", err)
		}
		if took > 60*time.Second {
			t.Errorf("the soak ran %v after the freeze: want it stopped within the heartbeat budget", took)
		}
	})
}

// TestVMSoakRecoversGuestPanic: a QEMU board whose kernel is panicked
// mid-soak through Magic SysRq on its serial console (a BREAK then 'c',
// as a lab engineer would) is lost at once on its console's panic line,
// well within the heartbeat budget; it is power-cycled through the vm
// driver (a new QEMU process), its agent redeployed and its subscriber
// resumed; the checkpoint holds exactly one fault window whose cause is
// the console panic and whose console tail has the sysrq and "Kernel
// panic" lines. With a budget of 0 the same panic fails the soak naming
// the board, the panic and the exhausted budget. Boots QEMU boards:
// HILRIG_VM=1 (the first run builds the board kernel: minutes).
func TestVMSoakRecoversGuestPanic(t *testing.T) {
	if os.Getenv("HILRIG_VM") != "1" {
		t.Skip("VM test: set HILRIG_VM=1 to boot two QEMU boards (needs qemu-system-x86, linux-source-6.1, busybox-static)")
	}
	const heartbeat = 5 * time.Second
	// panicked is what the hang saw: the rig, the QEMU it panicked and
	// when the keys went out.
	type panicked struct {
		r    *rig.Rig
		pid  int
		sent time.Time
	}
	sysrqCrash := func(p *panicked) func(r *rig.Rig, board string) error {
		return func(r *rig.Rig, board string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p.r, p.pid, p.sent = r, r.VMPID(board), time.Now()
			return r.VMSysRq(ctx, board, 'c')
		}
	}
	t.Run("recovered", func(t *testing.T) {
		var p panicked
		lg, _, err := soakWithHang(t, vmRecoveryRack(t), "vm-a", "vm-b", 90*time.Second, heartbeat, 1, sysrqCrash(&p))
		if err != nil {
			t.Fatalf("soak: %v; want it to survive vm-b's panic", err)
		}
		fw := faultWindows(lg)
		if len(fw) != 1 {
			t.Fatalf("%d fault windows, want exactly 1", len(fw))
		}
		f := fw[0].Fault
		t.Logf("fault: cause %q, recovery %q, %v after the sysrq, back after %v; console tail:\n%s",
			f.Cause, f.Recovery, f.From.Sub(p.sent).Round(time.Millisecond), f.To.Sub(f.From).Round(time.Millisecond), f.Console)
		if f.Board != "vm-b" || !strings.Contains(f.Cause, "board vm-b console: ") || !strings.Contains(f.Cause, "sysrq") {
			t.Errorf("fault cause %q: want vm-b's console panic line", f.Cause)
		}
		if !strings.Contains(f.Recovery, "power-cycled (recovery 1 of 1)") {
			t.Errorf("fault recovery %q: want power-cycled 1 of 1", f.Recovery)
		}
		for _, want := range []string{"sysrq: Trigger a crash", "Kernel panic - not syncing: sysrq triggered crash"} {
			if !strings.Contains(f.Console, want) {
				t.Errorf("fault console tail lacks %q", want)
			}
		}
		if d := f.From.Sub(p.sent); d > heartbeat {
			t.Errorf("the panic was noticed %v after the sysrq: want it within the heartbeat budget %v", d, heartbeat)
		}
		if pid := p.r.VMPID("vm-b"); pid == 0 || pid == p.pid {
			t.Errorf("vm-b's QEMU after the recovery is pid %d (before: %d): want a new process booted by the vm driver", pid, p.pid)
		}
		if deliveredAfter(lg, fw[0].Index) == 0 {
			t.Error("nothing delivered after the fault window: vm-b's subscriber did not resume")
		}
	})
	t.Run("budget exhausted", func(t *testing.T) {
		var p panicked
		_, took, err := soakWithHang(t, vmRecoveryRack(t), "vm-a", "vm-b", 90*time.Second, heartbeat, 0, sysrqCrash(&p))
		if !errors.Is(err, soakrun.ErrBoardLost) || !strings.Contains(err.Error(), "board vm-b console: ") ||
			!strings.Contains(err.Error(), "sysrq") || !strings.Contains(err.Error(), "recovery budget exhausted") {
			t.Fatalf("soak: %v; want ErrBoardLost naming vm-b, its console panic and the exhausted budget", err)
		}
		if took > 60*time.Second {
			t.Errorf("the soak ran %v: want it stopped at the panic, not at its end", took)
		}
	})
}
