package rt_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/hilrig/hilrig/middleware/internal/rt"
)

func TestAliveAndStartTime(t *testing.T) {
	st, err := rt.StartTime(os.Getpid())
	if err != nil || st == 0 {
		t.Fatalf("StartTime(self) = %d, %v", st, err)
	}
	if !rt.Alive(os.Getpid(), st) {
		t.Fatal("self reported dead")
	}
	if rt.Alive(os.Getpid(), st+1) {
		t.Fatal("self with another start time reported alive (PID reuse not detected)")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` binary:", err)
	}
	if rt.Alive(cmd.Process.Pid, 0) {
		t.Fatalf("exited child %d reported alive", cmd.Process.Pid)
	}
	if rt.Alive(0, 0) || rt.Alive(-1, 0) {
		t.Fatal("pid <= 0 reported alive")
	}
}

func TestSetThreadPinsAndRestores(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st, err := rt.SetThread(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Restore()
	if _, err := rt.SetThread(0, 100); err == nil {
		t.Fatal("priority 100 accepted")
	}
	if _, err := rt.SetThread(4096, 0); err == nil {
		t.Fatal("CPU 4096 accepted")
	}
}
