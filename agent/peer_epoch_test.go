package agent

import (
	"encoding/binary"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// TestPeerEpochLoss: a peer reader counts loss by sequence number within a
// publisher epoch, as hilrig's receivers do. A restarted publisher (new
// epoch, sequence back at 1) and a restarted subscriber (first message far
// into a stream) are not loss; a gap is; a straggler of the replaced
// publisher is delivered without switching back. Before peer headers
// carried an epoch, a restarted publisher's messages up to the old last
// sequence went uncounted, and a restarted subscriber counted every
// earlier message of the stream as lost.
func TestPeerEpochLoss(t *testing.T) {
	type msg struct {
		epoch     uint16
		seq, lost uint64
	}
	cases := []struct {
		name string
		late bool
		msgs []msg
	}{
		{"gap in one epoch", false, []msg{{7, 1, 0}, {7, 2, 0}, {7, 5, 2}, {7, 6, 0}}},
		{"publisher restarted", false, []msg{{7, 1, 0}, {7, 2, 0}, {7, 3, 0}, {8, 1, 0}, {8, 2, 0}, {8, 4, 1}}},
		{"straggler of the old publisher", false, []msg{{7, 1, 0}, {7, 2, 0}, {8, 1, 0}, {7, 3, 0}, {8, 2, 0}, {8, 3, 0}}},
		{"restarted publisher's first messages lost", false, []msg{{7, 1, 0}, {8, 3, 2}, {8, 4, 0}}},
		{"subscriber joins late", true, []msg{{7, 1000, 0}, {7, 1001, 0}, {7, 1003, 1}, {8, 2, 1}}},
		{"a slow first take is loss", false, []msg{{7, 40, 39}, {7, 41, 0}}},
		{"epoch 0 and a 48-bit sequence", false, []msg{{0, 1, 0}, {0, 1<<48 - 1, 1<<48 - 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := &peerIn{lateJoin: c.late}
			buf := make([]byte, agentproto.PeerHeaderBytes+8)
			for i, x := range c.msgs {
				binary.LittleEndian.PutUint64(buf[0:8], agentproto.PeerSeqWord(x.epoch, x.seq))
				var got middleware.Message
				if err := in.deliver(buf, 1, func(m *middleware.Message) error { got = *m; return nil }); err != nil {
					t.Fatal(err)
				}
				if got.Header.Seq != x.seq || got.Header.Epoch != uint32(x.epoch) || got.Lost != x.lost {
					t.Errorf("message %d (epoch %d seq %d): got epoch %d seq %d lost %d, want lost %d",
						i, x.epoch, x.seq, got.Header.Epoch, got.Header.Seq, got.Lost, x.lost)
				}
			}
		})
	}
}

// TestPeerEpochsDiffer: two writers opened in one agent never share an
// epoch (a publisher restarted in place is told from the one it replaced).
func TestPeerEpochsDiffer(t *testing.T) {
	a, b := newPeerEpoch(), newPeerEpoch()
	if a == b {
		t.Fatalf("two writers got epoch %d", a)
	}
	for _, seq := range []uint64{1, 2, 1<<48 - 1} {
		e, s := agentproto.SplitPeerSeqWord(agentproto.PeerSeqWord(a, seq))
		if e != a || s != seq {
			t.Errorf("PeerSeqWord(%d, %d) splits to (%d, %d)", a, seq, e, s)
		}
	}
}
