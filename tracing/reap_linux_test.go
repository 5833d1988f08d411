package tracing

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hilrig/hilrig/tracing/internal/tracefs"
)

// An instance left by a process that died without closing it (SIGKILL, a
// test binary killed on timeout) traces every scheduler switch and IRQ on
// the host until someone removes it: on 2026-12-03 six of them, from runs
// killed the day before, were still recording under every benchmark. Arm
// removes instances whose owner is gone, and leaves a live owner's alone.
func TestArmReapsInstancesOfDeadOwners(t *testing.T) {
	needTrace(t)
	root, err := tracefs.Root()
	if err != nil {
		t.Fatal(err)
	}
	// A pid that is certainly dead: a child that exited and was reaped.
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(root, "instances", "hilrig-"+strconv.Itoa(cmd.Process.Pid)+"-1")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(dead) })
	// A live owner's instance: this process's own, armed first.
	live, err := Arm(Config{BufferKB: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	s, err := Arm(Config{BufferKB: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("instance %s of exited pid %d still exists after Arm (stat: %v)", dead, cmd.Process.Pid, err)
	}
	if _, err := os.Stat(live.in.Dir()); err != nil {
		t.Errorf("Arm removed a live owner's instance %s: %v", live.in.Dir(), err)
	}
	if err := live.MarkSeq("still-armed", 1); err != nil {
		t.Errorf("the first session no longer marks: %v", err)
	}
}
