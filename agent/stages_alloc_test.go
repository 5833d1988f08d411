package agent

import (
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// The stage hooks and the join in onMessage allocate nothing per message.
func TestStageRecAllocs(t *testing.T) {
	pub := newStageRec(agentproto.Publisher, 0, 0)
	sub := newStageRec(agentproto.Subscriber, 0, 0)
	seq := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		seq++
		pub.publish(&middleware.PublishStages{Seq: seq, Entry: 100, CopyStart: 110, CopyEnd: 150, Commit: 160})
		sub.receive(&middleware.ReceiveStages{Seq: seq, Wake: 300, Callback: 320})
		sub.delivered(seq, 100)
	}); a != 0 {
		t.Fatalf("%v allocs per stamped message", a)
	}
	if pub.off[0] != 60 || sub.off[0] != 200 || pub.copy.Count() == 0 || sub.cb.Count() == 0 {
		t.Fatalf("recorded pub %d sub %d", pub.off[0], sub.off[0])
	}
	// The join: commit → wake = 200 − 60.
	st := agentproto.JoinStages(pub.stamps(), []*agentproto.StageStamps{sub.stamps()})
	if st.Wake.P50 < 139 || st.Wake.P50 > 141 || st.Copy.P50 < 39 || st.Copy.P50 > 41 || st.Callback.P50 < 19 || st.Callback.P50 > 21 {
		t.Fatalf("split %+v", st)
	}
}
