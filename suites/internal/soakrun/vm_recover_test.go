package soakrun_test

import (
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
// board vm-b has the vm power driver and its console captured.
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
    power: {driver: vm, timeout: 8s}
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
		var after int64
		for _, w := range lg.Windows {
			if w.Index > fw[0].Index {
				for _, a := range w.Agents {
					for _, s := range a.Streams {
						after += s.Delivered
					}
				}
			}
		}
		if after == 0 {
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
