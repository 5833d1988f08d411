package steps_test

import (
	"testing"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/kind"
	"github.com/hilrig/hilrig/suites/internal/steps"
)

// On the sim rack the IMU controller's topics run from the controller's
// board to its own over shared memory, the latency suite's a-b-shm path;
// the GPIO-only program has no bus route.
func TestDUTRoute(t *testing.T) {
	rack := simRack(t, fixtures.DetectSimEnv())
	imu, err := rack.DUT("imu-controller")
	if err != nil {
		t.Fatal(err)
	}
	rt := steps.DUTRoute(rack, imu)
	if rt == nil || rt.From != "board-a" || rt.To != "board-b" || !rt.SameKernel || rt.Class != kind.ClassSharedMemory {
		t.Errorf("imu-controller route %+v", rt)
	}
	edge, err := rack.DUT("edge-echo")
	if err != nil {
		t.Fatal(err)
	}
	if rt := steps.DUTRoute(rack, edge); rt != nil {
		t.Errorf("a GPIO-only dut has a bus route: %+v", rt)
	}
}
