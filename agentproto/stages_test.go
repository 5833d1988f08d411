package agentproto_test

import (
	"bytes"
	"testing"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
)

// The join pairs offsets by sequence number across different first
// sequence numbers, skips unstamped messages on either side, clamps a
// look that preceded the commit to 0 (counted), and merges subscribers.
func TestJoinStages(t *testing.T) {
	const u = agentproto.StageUnstamped
	cp := report.NewHistogram()
	cp.Record(50)
	pub := &agentproto.StageStamps{FirstSeq: 1, Offsets: []int32{10, 20, u, 40}, Copy: cp}
	cb := report.NewHistogram()
	cb.Record(7)
	subA := &agentproto.StageStamps{FirstSeq: 2, Offsets: []int32{1020, 2000, u}, Callback: cb}             // seqs 2, 3 (pub unstamped), 4
	subB := &agentproto.StageStamps{FirstSeq: 1, Offsets: []int32{5, 3000, 3000, 3000, 3000}, Callback: cb} // seq 1 before commit; 5 beyond pub
	st := agentproto.JoinStages(pub, []*agentproto.StageStamps{subA, nil, subB})
	if st == nil {
		t.Fatal("no split")
	}
	// Joined: A seq 2 (1000); B seq 1 (-5 → 0), seq 2 (2980), seq 4 (2960).
	if st.Count != 4 || st.Wake.Count != 4 || st.Wake.Min != 0 || st.Wake.Clamped != 1 || st.Wake.Max < 2979 || st.Wake.Max > 2981 {
		t.Fatalf("wake %+v (count %d)", st.Wake, st.Count)
	}
	if st.Callback.Count != 2 || st.Copy.Count != 1 || st.Method == "" {
		t.Fatalf("split %+v", st)
	}
	if agentproto.JoinStages(nil, []*agentproto.StageStamps{subA}) != nil {
		t.Fatal("a split without publisher stamps")
	}
}

// A final with the most stage stamps an endpoint sends, every offset at
// its longest spelling, plus both histograms, fits one protocol line and
// decodes back.
func TestStageStampsFitALine(t *testing.T) {
	off := make([]int32, agentproto.MaxStageSeqs)
	for i := range off {
		off[i] = agentproto.StageUnstamped + 1 // "-2147483647": the longest
	}
	h := report.NewHistogram()
	for i := int64(1); i < 1e9; i *= 3 {
		h.Record(i)
	}
	f := &agentproto.Final{Endpoint: "sub", Role: agentproto.Subscriber, Latency: h,
		Stages: &agentproto.StageStamps{FirstSeq: 101, Offsets: off, Stamped: agentproto.MaxStageSeqs, Copy: h, Callback: h}}
	var buf bytes.Buffer
	if err := agentproto.NewEncoder(&buf).Encode(&agentproto.Msg{Kind: agentproto.KindFinal, Final: f}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > agentproto.MaxLine {
		t.Fatalf("final with %d stage offsets is %d bytes, over MaxLine %d", len(off), buf.Len(), agentproto.MaxLine)
	}
	m, err := agentproto.NewDecoder(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Final.Stages; got == nil || len(got.Offsets) != agentproto.MaxStageSeqs || got.Offsets[0] != off[0] || got.Callback.Count() != h.Count() {
		t.Fatalf("decoded stamps %+v", got)
	}
}
