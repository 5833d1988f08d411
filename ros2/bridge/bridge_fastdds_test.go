//go:build fastdds

package bridge_test

import (
	"os"
	"testing"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/peers/fastdds"
)

func init() {
	openers["fastdds-udp"] = func(t *testing.T) agent.PeerROS2 {
		p, err := fastdds.Open(fastdds.Config{Domain: uint32(100 + os.Getpid()%100), Transport: fastdds.UDP})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return agent.AdaptPeer(p).(agent.PeerROS2)
	}
}
