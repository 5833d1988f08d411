//go:build fastdds

package main

import (
	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/peers/fastdds"
)

func init() {
	for _, tr := range []fastdds.Transport{fastdds.SHM, fastdds.UDP} {
		peers[tr.Name()] = func(_ string, n agentproto.PeerNet) (agent.Peer, error) {
			d, err := envUint("HILRIG_DDS_DOMAIN", 0)
			if err != nil {
				return nil, err
			}
			t := tr
			if t == fastdds.SHM && n.SharedMemoryOnly {
				t = fastdds.SHMOnly
			}
			p, err := fastdds.Open(fastdds.Config{Domain: uint32(d), Transport: t, Address: n.Address, Peers: n.Peers})
			if err != nil {
				return nil, err
			}
			return agent.AdaptPeer(p), nil
		}
	}
}
