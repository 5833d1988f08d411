package vmboard

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
)

// TestQMPAgainstQEMU drives a real QEMU's monitor (no guest: -S, no
// kernel, so no image build) through Board.QMP and Board.Status.
func TestQMPAgainstQEMU(t *testing.T) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		if os.Getenv("HILRIG_VM") == "1" {
			t.Fatal(err)
		}
		t.Skip("qemu-system-x86_64 not installed")
	}
	sock := filepath.Join(t.TempDir(), "qmp.sock")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu, "-S", "-nodefaults", "-display", "none", "-machine", "accel=tcg",
		"-qmp", "unix:"+sock+",server=on,wait=off")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	// The socket file appears at bind(), before QEMU listens on it: a
	// connect between the two is refused (seen on a loaded CI host), so
	// wait for a connect that succeeds, not for the file.
	testkit.Eventually(t, 30*time.Second, "QEMU's QMP socket", func() bool {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	})
	b := &Board{qmpSock: sock}
	for _, step := range []struct{ cmd, want string }{{"", "prelaunch"}, {"cont", "running"}, {"stop", "paused"}, {"cont", "running"}} {
		if step.cmd != "" {
			if _, err := b.QMP(ctx, step.cmd); err != nil {
				t.Fatal(err)
			}
		}
		if st, err := b.Status(ctx); err != nil || st != step.want {
			t.Fatalf("after %q: status %q, %v; want %s", step.cmd, st, err, step.want)
		}
	}
	if _, err := b.QMP(ctx, "no-such-command"); err == nil {
		t.Error("an unknown QMP command did not fail")
	}
	if _, err := b.QMP(ctx, "quit"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		exited <- nil // for the cleanup
	case <-ctx.Done():
		t.Fatal("QEMU did not exit after quit")
	}
	// A dead monitor fails with the command named, within ctx.
	if _, err := b.QMP(ctx, "query-status"); err == nil {
		t.Error("QMP on an exited QEMU did not fail")
	}
}
