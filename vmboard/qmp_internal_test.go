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
	DriveQMP(t, ctx, b, "prelaunch", "cont", "running", "stop", "paused", "cont", "running")
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

// DriveQMP checks b's QMP status is first, then sends each command of
// steps (pairs of command and the status it must leave), then checks an
// unknown command fails and quits the VM. (Exported for the external
// tests of this package.)
func DriveQMP(t *testing.T, ctx context.Context, b *Board, first string, steps ...string) {
	t.Helper()
	if st, err := b.Status(ctx); err != nil || st != first {
		t.Fatalf("at start: status %q, %v; want %s", st, err, first)
	}
	for i := 0; i+1 < len(steps); i += 2 {
		if _, err := b.QMP(ctx, steps[i]); err != nil {
			t.Fatal(err)
		}
		if st, err := b.Status(ctx); err != nil || st != steps[i+1] {
			t.Fatalf("after %q: status %q, %v; want %s", steps[i], st, err, steps[i+1])
		}
	}
	if _, err := b.QMP(ctx, "no-such-command"); err == nil {
		t.Error("an unknown QMP command did not fail")
	}
	if _, err := b.QMP(ctx, "quit"); err != nil {
		t.Fatal(err)
	}
}
