package agent

import (
	"math"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
)

// stageRec records one endpoint's shared-memory stage stamps
// (Start.Stages). Every method runs on the endpoint's own goroutine — the
// middleware calls the stage hooks on the publishing and the receiving
// goroutine, which is the hot loop — and final reads it after the loop
// ended on that goroutine too: no locking. 0 allocs per message
// (TestStageRecAllocs): the offsets are allocated at start.
type stageRec struct {
	first   uint64 // sequence number of off[0]
	off     []int32
	stamped uint64
	copy    *report.Histogram // publisher
	cb      *report.Histogram // subscriber
	// The receive hook's stamps of the message whose callback runs next:
	// the hook has no header, onMessage has no wake-up stamp.
	seq  uint64
	wake int64
}

// newStageRec sizes the offsets for count messages (0: unbounded) after
// warmUp, at most agentproto.MaxStageSeqs.
func newStageRec(role agentproto.Role, warmUp, count uint64) *stageRec {
	n := uint64(agentproto.MaxStageSeqs)
	if count > warmUp && count-warmUp < n {
		n = count - warmUp
	}
	r := &stageRec{first: warmUp + 1, off: make([]int32, n)}
	for i := range r.off {
		r.off[i] = agentproto.StageUnstamped
	}
	if role == agentproto.Publisher {
		r.copy = report.NewHistogram()
	} else {
		r.cb = report.NewHistogram()
	}
	return r
}

func clamp32(v int64) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v <= agentproto.StageUnstamped:
		return agentproto.StageUnstamped + 1
	}
	return int32(v)
}

// publish is the publisher's hook (middleware.PublisherOptions.Stages).
func (r *stageRec) publish(p *middleware.PublishStages) {
	if p.Seq < r.first {
		return // warm-up
	}
	r.stamped++
	if p.CopyEnd != 0 {
		r.copy.Record(p.CopyEnd - p.CopyStart)
	}
	if i := p.Seq - r.first; i < uint64(len(r.off)) {
		r.off[i] = clamp32(p.Commit - p.Entry)
	}
}

// receive is the subscriber's hook (middleware.SubscriberOptions.Stages),
// called just before the callback of message s.Seq.
func (r *stageRec) receive(s *middleware.ReceiveStages) {
	r.seq, r.wake = s.Seq, s.Wake
	if s.Seq >= r.first {
		r.stamped++
		r.cb.Record(s.Callback - s.Wake)
	}
}

// delivered joins the receive hook's wake-up with the message's header
// (onMessage): Wake − SendMono, the publisher's entry.
func (r *stageRec) delivered(seq uint64, sendMono int64) {
	if seq != r.seq || seq < r.first {
		return
	}
	if i := seq - r.first; i < uint64(len(r.off)) {
		r.off[i] = clamp32(r.wake - sendMono)
	}
}

// stamps is the final's report.
// Trailing unstamped offsets are cut: a short run, or a transport the
// hooks do not serve (udp), sends no wall of markers.
func (r *stageRec) stamps() *agentproto.StageStamps {
	off := r.off
	for len(off) > 0 && off[len(off)-1] == agentproto.StageUnstamped {
		off = off[:len(off)-1]
	}
	return &agentproto.StageStamps{FirstSeq: r.first, Offsets: off, Stamped: r.stamped, Copy: r.copy, Callback: r.cb}
}
