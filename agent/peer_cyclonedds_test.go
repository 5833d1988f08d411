//go:build cyclonedds

package agent

import (
	"github.com/hilrig/hilrig/agentproto"
	"os"

	"github.com/hilrig/hilrig/peers/cyclonedds"
)

func init() {
	testPeers[cyclonedds.Name] = func(string, agentproto.PeerNet) (Peer, error) {
		// A domain of this test process: other processes on the machine
		// (other tests, ddsperf) never match its topics.
		p, err := cyclonedds.Open(cyclonedds.Config{Domain: uint32(100 + os.Getpid()%100)})
		if err != nil {
			return nil, err
		}
		return AdaptPeer(p), nil
	}
}
