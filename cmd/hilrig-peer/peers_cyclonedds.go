//go:build cyclonedds

package main

import (
	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/peers/cyclonedds"
)

func init() {
	peers[cyclonedds.Name] = func(_ string, n agentproto.PeerNet) (agent.Peer, error) {
		d, err := envUint("HILRIG_DDS_DOMAIN", 0)
		if err != nil {
			return nil, err
		}
		p, err := cyclonedds.Open(cyclonedds.Config{Domain: uint32(d), Address: n.Address, Peers: n.Peers})
		if err != nil {
			return nil, err
		}
		return agent.AdaptPeer(p), nil
	}
}
