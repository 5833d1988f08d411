//go:build iceoryx

package agent

import (
	"context"
	"errors"
	"github.com/hilrig/hilrig/agentproto"
	"time"

	"github.com/hilrig/hilrig/peers/iceoryx"
	"github.com/hilrig/hilrig/peers/iceoryx/roudi"
)

func init() {
	// One RouDi for the test binary (the iceoryx runtime is per process
	// and outlives a RouDi it was registered with): started here unless
	// one runs, stopped and cleaned up after the tests.
	peerSetups = append(peerSetups, func() (func(), error) {
		// Start waits its turn behind a RouDi another test binary
		// started; one started by hand is used as it is.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err := roudi.Start(ctx, 1<<20)
		if errors.Is(err, roudi.ErrRunning) {
			return func() { iceoryx.Shutdown() }, nil
		}
		if err != nil {
			return nil, err
		}
		return func() { iceoryx.Shutdown(); r.Stop() }, nil
	})
	testPeers[iceoryx.Name] = func(board string, _ agentproto.PeerNet) (Peer, error) {
		p, err := iceoryx.Open(context.Background(), iceoryx.Config{App: "hilrig-test-" + board})
		if err != nil {
			return nil, err
		}
		return keepRuntime{AdaptPeer(p)}, nil
	}
}

// keepRuntime: the test binary runs many agents in one process, but the
// iceoryx runtime is the process's; it is shut down once, in TestMain.
type keepRuntime struct{ Peer }

func (keepRuntime) Close() error { return nil }

// ProcessWide forwards the runtime's PeerProcessWide (the embedded Peer
// interface does not carry it).
func (k keepRuntime) ProcessWide() bool { return processWide(k.Peer) }
