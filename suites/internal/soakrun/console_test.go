package soakrun_test

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/rig/console"
	"github.com/hilrig/hilrig/suites/internal/soakrun"
)

// A kernel panic's dump is longer than the tail: the fault's console
// still shows the panic line (before the tail), and the panic counts
// only after since.
func TestConsoleTailKeepsPanicLine(t *testing.T) {
	var in strings.Builder
	for i := range 10 {
		fmt.Fprintf(&in, "boot line %d\n", i)
	}
	in.WriteString("sysrq: Trigger a crash\nKernel panic - not syncing: sysrq triggered crash\n")
	for i := range 50 {
		fmt.Fprintf(&in, " dump line %d\n", i)
	}
	c, err := console.Start("b", io.NopCloser(strings.NewReader(in.String())), console.Options{Path: filepath.Join(t.TempDir(), "console.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("capture did not read its input")
	}
	captures := func(board string) (*console.Capture, bool) { return c, board == "b" }
	got := soakrun.ConsoleTail(captures, 40)("b")
	for _, want := range []string{"[panic] sysrq: Trigger a crash", "[panic] Kernel panic - not syncing", "[...]", " dump line 49", " dump line 10"} {
		if !strings.Contains(got, want) {
			t.Errorf("tail lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "boot line") || strings.Contains(got, " dump line 9\n") {
		t.Errorf("tail has lines from before its 40 other than the flagged ones:\n%s", got)
	}
	if got := soakrun.ConsoleTail(captures, 40)("other"); got != "" {
		t.Errorf("tail of a board without a capture: %q", got)
	}
	before := time.Now().Add(-time.Hour)
	if l := soakrun.ConsolePanic(captures)("b", before); l != "sysrq: Trigger a crash" {
		t.Errorf("ConsolePanic = %q, want the sysrq line", l)
	}
	if l := soakrun.ConsolePanic(captures)("b", time.Now()); l != "" {
		t.Errorf("ConsolePanic after the panic = %q, want none", l)
	}
}
