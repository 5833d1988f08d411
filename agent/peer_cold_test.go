package agent_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// TestPeerColdParticipant: an endpoint started ColdPeer runs on a
// participant of its own, says so in its started message (a peer with one
// runtime per process, iceoryx, shares it and says not), delivers, and
// closes it at its end — twice in a row, so a closed participant leaves
// nothing that breaks the next (Cyclone DDS deletes its domain with its
// last participant). hilrig's middleware refuses the flag.
func TestPeerColdParticipant(t *testing.T) {
	if len(testPeers) == 0 {
		t.Skip("built without peers (tags cyclonedds, fastdds, iceoryx)")
	}
	for mw := range testPeers {
		t.Run(mw, func(t *testing.T) {
			wantCold := !strings.HasPrefix(mw, "iceoryx")
			dir := t.TempDir()
			s, ps := startPeerSession(t, dir), startPeerSession(t, dir)
			const n = 20
			for round := range 2 {
				c := confContract(mw, "conf/cold/"+strconv.Itoa(os.Getpid())+"/"+strconv.Itoa(round), middleware.Reliable, 32)
				sub, pub := "sub"+strconv.Itoa(round), "pub"+strconv.Itoa(round)
				s.send(agentproto.NewStart(agentproto.Start{Endpoint: sub, Role: agentproto.Subscriber, Middleware: mw, Domain: "conf", Contract: c, Count: n, ColdPeer: true}))
				if st := s.expect(agentproto.KindStarted).Started; st.Cold != wantCold {
					t.Errorf("round %d: subscriber started cold=%v, want %v (%s)", round, st.Cold, wantCold, st.Peer)
				}
				ps.send(agentproto.NewStart(agentproto.Start{Endpoint: pub, Role: agentproto.Publisher, Middleware: mw, Domain: "conf", Contract: c, Count: n, Payload: 64, RateHz: 1000, ColdPeer: true}))
				st := ps.expect(agentproto.KindStarted).Started
				t.Logf("round %d: publisher started cold=%v after %d ns of discovery", round, st.Cold, st.DiscoveryNs)
				if st.Cold != wantCold || st.DiscoveryNs <= 0 {
					t.Errorf("round %d: publisher started cold=%v discovery %d ns, want cold=%v and a discovery time", round, st.Cold, st.DiscoveryNs, wantCold)
				}
				if f := s.finals(sub)[sub]; f.Received != n || f.Lost != 0 {
					t.Fatalf("round %d: received %d, lost %d of %d (%+v)", round, f.Received, f.Lost, n, f)
				}
				ps.finals(pub)
				// The publisher lingers for late readers; end it (and its
				// participant) before the next round.
				ps.send(agentproto.NewStop(pub))
			}
		})
	}
	t.Run("hilrig refuses", func(t *testing.T) {
		s := startPeerSession(t, t.TempDir())
		s.send(agentproto.NewStart(agentproto.Start{Endpoint: "x", Role: agentproto.Subscriber, Contract: confContract(agentproto.MiddlewareHilrig, "conf/cold/h", middleware.Reliable, 4), ColdPeer: true}))
		if e := s.expect(agentproto.KindError).Error; e.Code != agentproto.CodeInvalid || !strings.Contains(e.Message, "cold_peer") {
			t.Errorf("hilrig with cold_peer: %+v, want an invalid-start error naming cold_peer", e)
		}
	})
}

// TestPeerLinkNotRunning: a peer start whose peer_net address is on no
// running interface of the board fails within the link wait with an error
// naming the board, the peer and the address — before, the peer was
// opened anyway (Fast DDS then filters the interface out and runs with no
// network) and a ping-pong waited for replies that could not come.
func TestPeerLinkNotRunning(t *testing.T) {
	old := *agent.PeerLinkWait
	*agent.PeerLinkWait = 200 * time.Millisecond
	t.Cleanup(func() { *agent.PeerLinkWait = old })
	s := startPeerSession(t, t.TempDir())
	c := confContract("cyclonedds", "conf/link/"+strconv.Itoa(os.Getpid()), middleware.Reliable, 32)
	s.send(agentproto.NewStart(agentproto.Start{Endpoint: "x", Role: agentproto.Subscriber, Middleware: "cyclonedds", Domain: "conf", Contract: c,
		PeerNet: &agentproto.PeerNet{Address: "192.0.2.1", Peers: []string{"192.0.2.2"}}}))
	e := s.expect(agentproto.KindError).Error
	for _, want := range []string{`board "conf"`, "peer cyclonedds", "peer_net.address", "192.0.2.1 is on no interface"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("error %q does not say %q", e.Message, want)
		}
	}
	if e.Code != agentproto.CodeStart {
		t.Errorf("code %s, want %s", e.Code, agentproto.CodeStart)
	}
}
