// The faults suite (label faults; the quick ones also smoke): SIGKILLed
// publishers and subscribers, stale shared memory and `hilrig shm clean`,
// UDP under the seeded fault layer, a flood of malformed and forged
// datagrams, a killed PTP grandmaster (needs:ptp), a scope answering
// garbage or disconnecting (needs:scope, always the simulator), and a
// controller killed mid-soak.
package faults_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hilrig/hilrig/suites/internal/faultkit"
	"github.com/hilrig/hilrig/suites/internal/harness"
)

// The faults re-execute this binary as helper processes (a publisher, a
// subscriber, a soak writer) that they SIGKILL; such a run never reaches
// Ginkgo.
func init() { faultkit.RunHelperIfRequested() }

func TestFaults(t *testing.T) { harness.RunSuite(t, "faults") }

var _ = ReportAfterSuite("hilrig faults report", harness.WriteReport)
