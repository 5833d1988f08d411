package main

import (
	"errors"
	"slices"
	"testing"
)

// TestPeerPingPongArgs: `hilrig bench pingpong --transport <peer>` becomes
// the peer agent's `bench pingpong` with the same sizes, count, wait,
// QoS and pinning; hilrig's own transports stay with bench.Main; a flag
// the peer bench has no counterpart for is refused, naming what works.
func TestPeerPingPongArgs(t *testing.T) {
	for _, c := range []struct {
		args, want, tags []string
	}{
		{[]string{"pingpong", "--transport", "cyclonedds", "--size", "64,1MiB", "-n", "500", "--reliable", "--pin"},
			[]string{"bench", "pingpong", "--transport", "cyclonedds", "--sizes", "64,1048576", "--count", "500", "--reliable", "--cpus", "0,1"},
			[]string{"cyclonedds"}},
		{[]string{"pingpong", "--transport=fastdds-udp,iceoryx,fastdds-shm", "--size", "4KiB", "--size", "16", "--wait", "spin", "--pong-cpu", "0"},
			[]string{"bench", "pingpong", "--transport", "fastdds-udp,iceoryx,fastdds-shm", "--sizes", "4096,16", "--wait", "spin", "--cpus", "0,0"},
			[]string{"fastdds", "iceoryx"}},
		{[]string{"pingpong", "--transport", "iceoryx"},
			[]string{"bench", "pingpong", "--transport", "iceoryx", "--cpus", ""}, []string{"iceoryx"}},
	} {
		got, tags, ok, err := peerPingPong(c.args)
		if err != nil || !ok || !slices.Equal(got, c.want) || !slices.Equal(tags, c.tags) {
			t.Errorf("peerPingPong(%q) = %q %v %v %v, want %q %v", c.args, got, tags, ok, err, c.want, c.tags)
		}
	}
	for _, own := range [][]string{
		{"pingpong", "--transport", "udp", "--compare", "--size", "16"},
		{"pingpong"},
		{"throughput", "--transport", "cyclonedds"},
		{"pingpong", "--transport", "shm,cyclonedds"},
	} {
		if _, _, ok, err := peerPingPong(own); ok || err != nil {
			t.Errorf("peerPingPong(%q) took it (%v, %v): hilrig's bench handles it", own, ok, err)
		}
	}
	if _, _, ok, err := peerPingPong([]string{"pingpong", "--transport", "cyclonedds", "--compare"}); !ok || !errors.Is(err, errPeerBench) {
		t.Errorf("--compare with a peer: ok %v err %v, want a refusal", ok, err)
	}
}
