package agent

// testPeers are the peer adapters this test binary was built with (the
// peers/… build tags; peer_*_test.go register them in init).
var testPeers = map[string]func(board string) (Peer, error){}

// TestPeers exports testPeers to the external tests (conformance_test.go).
var TestPeers = testPeers
