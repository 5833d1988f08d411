package steps

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/rig"
)

// TestFailingCaseCarriesConsoleTail: a case that fails its bounds gets
// the boards' console tails (flagged lines first) as a note; a passing
// one does not.
func TestFailingCaseCarriesConsoleTail(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	rack, err := fixtures.ParseRack("c.yaml", []byte(fmt.Sprintf("name: c\nboards:\n  - name: dut\n    reach: local\n    console: {device: %s}\n", tty.Name())))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := rig.Open(ctx, rack, &rig.Options{ConsoleDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, _ := r.Console("dut")
	fmt.Fprint(ptmx, "[ 9.1] Kernel panic - not syncing: sysrq triggered crash\r\n")
	testkit.Eventually(t, 10*time.Second, "the panic line captured", func() bool { return len(c.Flags()) == 1 })
	env := &Env{Rig: r}
	zero := int64(0)
	failing := finish(env, &report.Case{Name: "lossy", Sent: 10, Delivered: 5, Lost: 5, Bounds: &report.Bounds{MaxLost: &zero}})
	if failing.Verdict != report.Fail || !strings.Contains(strings.Join(failing.Notes, "\n"), "[panic] [ 9.1] Kernel panic") {
		t.Errorf("failing case: verdict %s, notes %q; want the console's panic line", failing.Verdict, failing.Notes)
	}
	passing := finish(env, &report.Case{Name: "clean", Sent: 10, Delivered: 10, Bounds: &report.Bounds{MaxLost: &zero}})
	if passing.Verdict == report.Fail || len(passing.Notes) != 0 {
		t.Errorf("passing case: verdict %s, notes %q; want no console note", passing.Verdict, passing.Notes)
	}
}
