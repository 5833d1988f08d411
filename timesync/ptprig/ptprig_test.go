package ptprig_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/ptprig"
)

func TestConfigRefusesClockAdjustingConfigs(t *testing.T) {
	base := "[global]\nfree_running 0\nkernel_leap 0\nuds_address /x\n[eth0]\n"
	if _, err := ptprig.Config(base, "/tmp/s", "veth0"); err == nil || !strings.Contains(err.Error(), "free_running") {
		t.Fatalf("Config accepted free_running 0: %v", err)
	}
	if _, err := ptprig.Config("[global]\n", "/tmp/s", "veth0"); err == nil {
		t.Fatal("Config accepted a config without uds_address")
	}
}

// TestRigLifecycle starts a rig, sees the slave reach SLAVE, and checks that
// Close leaves no process, namespace or file behind.
func TestRigLifecycle(t *testing.T) {
	if err := ptprig.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	start := time.Now()
	r, err := ptprig.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	src, err := timesync.DialPTP4L(ctx, r.SlaveSocket, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var st timesync.Status
	for {
		st, err = src.Status(ctx)
		if err == nil && st.PortState == timesync.PortStateSlave {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("slave never reached SLAVE: last %+v err %v\n%s", st, err, r.Tail(ptprig.Slave, 30))
		}
		time.Sleep(100 * time.Millisecond) // poll interval, not synchronisation
	}
	t.Logf("SLAVE after %v: %+v", time.Since(start).Round(time.Millisecond), st)
	if st.GMIdentity != r.GMIdentity {
		t.Errorf("GM identity %v, want %v", st.GMIdentity, r.GMIdentity)
	}
	nsA, nsB, dir := r.Pair.A.Name, r.Pair.B.Name, r.Dir
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := netns.List()
	for _, n := range names {
		if n == nsA || n == nsB {
			t.Errorf("namespace %s still exists after Close", n)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("rig dir %s still exists after Close: %v", dir, err)
	}
	if out, _ := exec.Command("pgrep", "-f", dir).Output(); len(out) > 0 {
		t.Errorf("ptp4l still running after Close: pids %s", out)
	}
}
