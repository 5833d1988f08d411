package steps_test

import (
	"strings"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/suites/internal/steps"
)

// TestMethodVMPairNotOneKernel: two QEMU guests (fixtures/examples/
// vm-pair.yaml) each have their own kernel and clock, shared with nobody —
// not each other, not the controller host. The case's method must not
// claim one CLOCK_MONOTONIC for them, their flow must measure on the
// stamp clocks, and the host probe must not count them as the
// controller's (issue 13: steps once took every non-ssh board for the
// controller host).
func TestMethodVMPairNotOneKernel(t *testing.T) {
	rack, err := fixtures.LoadRack("../../../fixtures/examples/vm-pair.yaml")
	if err != nil {
		t.Fatal(err)
	}
	from, to, _, err := steps.Route(rack, steps.UDP)
	if err != nil {
		t.Fatal(err)
	}
	m := steps.Method(rack, from, to)
	if strings.Contains(m.Clocks, "one kernel") || strings.Contains(m.Clocks, "CLOCK_MONOTONIC") {
		t.Errorf("Method(%s, %s) for two QEMU guests = %q: each guest has its own kernel and clock", from, to, m.Clocks)
	}
	if !strings.Contains(m.Clocks, "NOT synchronised") {
		t.Errorf("Method(%s, %s) = %q: the guests' clocks are not synchronised (rack claims no ptp)", from, to, m.Clocks)
	}
	if lc := steps.LatencyClock(rack, from, to); lc != agentproto.LatencyStamp {
		t.Errorf("LatencyClock(%s, %s) = %q, want %q", from, to, lc, agentproto.LatencyStamp)
	}
	for _, b := range rack.Boards {
		if b.OnController() {
			t.Errorf("vm board %s counted as on the controller's host", b.Name)
		}
	}
	if m := steps.Method(rack, from, from); !strings.Contains(m.Clocks, "one kernel") {
		t.Errorf("Method(%s, %s) = %q: a board shares its own kernel", from, from, m.Clocks)
	}
}
