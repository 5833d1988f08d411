//go:build cyclonedds

package bridge_test

import (
	"os"
	"testing"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/peers/cyclonedds"
)

func init() {
	openers["cyclonedds"] = func(t *testing.T) agent.PeerROS2 {
		p, err := cyclonedds.Open(cyclonedds.Config{Domain: uint32(100 + os.Getpid()%100)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return agent.AdaptPeer(p).(agent.PeerROS2)
	}
}
