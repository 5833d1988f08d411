package agent

import (
	"os"
	"testing"
)

// testPeers are the peer adapters this test binary was built with (the
// peers/… build tags; peer_*_test.go register them in init).
var testPeers = map[string]PeerOpener{}

// TestPeers exports testPeers to the external tests (conformance_test.go).
var TestPeers = testPeers

// peerSetups run before the tests and return their teardown (a RouDi for
// iceoryx).
var peerSetups []func() (func(), error)

func TestMain(m *testing.M) {
	var teardown []func()
	for _, setup := range peerSetups {
		td, err := setup()
		if err != nil {
			os.Stderr.WriteString("peer setup: " + err.Error() + "\n")
			os.Exit(2)
		}
		teardown = append(teardown, td)
	}
	code := m.Run()
	for _, td := range teardown {
		td()
	}
	os.Exit(code)
}
