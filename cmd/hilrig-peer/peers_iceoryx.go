//go:build iceoryx

package main

import (
	"context"
	"github.com/hilrig/hilrig/agentproto"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/peers/iceoryx"
)

func init() {
	peers[iceoryx.Name] = func(board string, _ agentproto.PeerNet) (agent.Peer, error) {
		m, err := envUint("HILRIG_IOX_MAX_PAYLOAD", 1<<20)
		if err != nil {
			return nil, err
		}
		p, err := iceoryx.Open(context.Background(), iceoryx.Config{App: "hilrig-" + board, StartRouDi: true, MaxPayload: int(m)})
		if err != nil {
			return nil, err
		}
		return agent.AdaptPeer(p), nil
	}
}
