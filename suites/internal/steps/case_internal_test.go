package steps

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/deploy/deploytest"
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

// The controller-host fallback runs bench's ping-pong against a child of
// the real hilrig binary and returns the one-way percentiles of every
// timed round trip, ordered, with jitter p99 − p50; an unknown transport
// is refused before anything starts.
func TestHostPingPong(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hilrig and runs a ping-pong")
	}
	bin, _, err := deploytest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, spec := range []hostPingPong{
		{Transport: fixtures.Shm, Payload: 64, RoundTrips: 200, Warmup: 20},
		{Transport: fixtures.Shm, Send: agentproto.SendLoan, Payload: 64, RoundTrips: 200, Warmup: 20},
	} {
		s, err := spec.run(ctx, bin)
		if err != nil {
			t.Fatalf("%s/%s: %v", spec.Transport, spec.Send, err)
		}
		if s.Count != 200 || s.Min <= 0 || s.P50 < s.Min || s.P99 < s.P50 || s.Max < s.P99 || s.Jitter != s.P99-s.P50 {
			t.Errorf("%s/%s: summary %+v: want 200 ordered one-way percentiles, jitter p99 − p50", spec.Transport, spec.Send, s)
		}
	}
	if _, err := (hostPingPong{Transport: "can", Payload: 64}).run(ctx, bin); err == nil {
		t.Error("transport \"can\" accepted")
	}
}
