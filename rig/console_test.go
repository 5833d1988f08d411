package rig_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/rig"
	"github.com/hilrig/hilrig/rig/console/consoletest"
)

// TestRigCapturesBoardConsoles: a board with a console: block has its
// serial console captured into Options.ConsoleDir from Open to Close.
func TestRigCapturesBoardConsoles(t *testing.T) {
	p := consoletest.New(t)
	rack := p.Rack(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{Binary: hilrigBin, ConsoleDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := r.Console("dut")
	if !ok {
		t.Fatal("no console capture for board dut")
	}
	p.Write("[ 1.0] Out of memory: Killed process 42 (hilrig)")
	p.Write("login: ")
	testkit.Eventually(t, 10*time.Second, "the OOM line flagged", func() bool { return len(c.Flags()) == 1 && len(c.Tail(5)) == 2 })
	// What a failing case carries: the flagged line and the tail.
	rep := r.ConsoleReport(5)
	if !strings.Contains(rep, "console dut") || !strings.Contains(rep, "flagged:\n    ") || !strings.Contains(rep, "[oom] [ 1.0] Out of memory") ||
		!strings.Contains(rep, "last 2 lines:") || !strings.Contains(rep, "login:") {
		t.Errorf("ConsoleReport:\n%s\nwant board dut, the flagged OOM line and the last 2 lines", rep)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "console-dut.log"))
	if err != nil || !strings.Contains(string(b), "[oom] [ 1.0] Out of memory") {
		t.Fatalf("capture file %q, %v", b, err)
	}
}
