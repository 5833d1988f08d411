package agent

import (
	"fmt"
	"slices"
)

// testPeers are the peer adapters this test binary was built with (the
// peers/… build tags; peer_*_test.go register them in init).
var testPeers = map[string]PeerOpener{}

// TestPeers exports testPeers to the external tests (conformance_test.go).
var TestPeers = testPeers

// PeerLinkWait lets the external tests shorten peerLinkWait.
var PeerLinkWait = &peerLinkWait

// peerSetups run before the tests and return their teardown (a RouDi for
// iceoryx).
var peerSetups []func() (func(), error)

// SetUpPeers runs peerSetups and returns one teardown for all of them;
// the package's TestMain (main_test.go) calls it before the tests.
func SetUpPeers() (func(), error) {
	var teardown []func()
	undo := func() {
		for _, td := range teardown {
			td()
		}
	}
	for _, setup := range peerSetups {
		td, err := setup()
		if err != nil {
			undo()
			return nil, fmt.Errorf("peer setup: %w", err)
		}
		teardown = append(teardown, td)
	}
	return undo, nil
}

// ROS2TestPeers are the registered test peers that speak ROS 2 (the DDS
// ones), sorted.
func ROS2TestPeers() []string {
	var names []string
	for n := range testPeers {
		if n == "cyclonedds" || n == "fastdds-udp" || n == "fastdds-shm" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
