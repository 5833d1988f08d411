//go:build cyclonedds || fastdds

package bridge_test

import (
	"testing"

	"github.com/hilrig/hilrig/agent"
)

// openers are the real DDS sides this test binary was built with
// (bridge_cyclonedds_test.go, bridge_fastdds_test.go).
var openers = map[string]func(t *testing.T) agent.PeerROS2{}

// TestBridgeDDS runs the conformance test over each real DDS peer: the
// bridge on one participant, the probe node on another in the same
// domain.
func TestBridgeDDS(t *testing.T) {
	for name, open := range openers {
		t.Run(name, func(t *testing.T) { conform(t, open(t), open(t)) })
	}
}
