//go:build fastdds

package agent

import (
	"github.com/hilrig/hilrig/agentproto"
	"os"

	"github.com/hilrig/hilrig/peers/fastdds"
)

func init() {
	for _, tr := range []fastdds.Transport{fastdds.SHM, fastdds.UDP, fastdds.SHMOnly} {
		name := tr.Name()
		if tr == fastdds.SHMOnly {
			name += "-only"
		}
		testPeers[name] = func(string, agentproto.PeerNet) (Peer, error) {
			p, err := fastdds.Open(fastdds.Config{Domain: uint32(100 + os.Getpid()%100), Transport: tr})
			if err != nil {
				return nil, err
			}
			return AdaptPeer(p), nil
		}
	}
}
