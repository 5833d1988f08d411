package agentproto

import (
	"math"

	"github.com/hilrig/hilrig/report"
)

// MaxStageSeqs bounds the per-message stage offsets one endpoint sends in
// its final (the first MaxStageSeqs messages after warm-up): 16384
// numbers of at most 11 characters fit the final's line (MaxLine) beside
// its histograms.
const MaxStageSeqs = 16384

// StageUnstamped marks a message in StageStamps.Offsets that was not
// stamped (lost, or sent after a timeout skipped its sequence number).
const StageUnstamped = math.MinInt32

// StageStamps are one shared-memory endpoint's stage stamps over its run
// (Start.Stages), all CLOCK_MONOTONIC differences in ns. The controller
// joins a publisher's with its subscribers' by sequence number
// (JoinStages): commit → wake needs both ends' stamps of one message,
// and the two ends may be two processes.
type StageStamps struct {
	// FirstSeq is the sequence number of Offsets[0] (WarmUp + 1).
	FirstSeq uint64 `json:"first_seq"`
	// Offsets[i] is, for sequence number FirstSeq+i, the publisher's
	// Commit − Entry or the subscriber's Wake − Header.SendMono (SendMono
	// is the publisher's Entry, so both are measured from one instant);
	// StageUnstamped where the message was not stamped. Clamped to the
	// int32 range (±2.1 s).
	Offsets []int32 `json:"offsets"`
	// Stamped counts the messages stamped after warm-up, Offsets or not.
	Stamped uint64 `json:"stamped"`
	// Copy is the publisher's copy into the slot (CopyEnd − CopyStart;
	// empty on the loan path, where the caller filled the slot).
	Copy *report.Histogram `json:"copy,omitempty"`
	// Callback is the subscriber's wake-up → callback entry.
	Callback *report.Histogram `json:"callback,omitempty"`
}

// MethodStages describes JoinStages' figures.
const MethodStages = "middleware stage stamps (PublisherOptions/SubscriberOptions.Stages, CLOCK_MONOTONIC through the vDSO): copy = CopyEnd − CopyStart on the publisher (Send path only); commit → wake = (subscriber Wake − Header.SendMono) − (publisher Commit − Entry), joined by sequence number over the first 16384 messages after warm-up of every subscriber (a subscriber that looked just before the commit and found the message on that look clamps to 0); wake → callback = Callback − Wake on the subscriber (a message already waiting counts the time of the look as its wake-up)"

// JoinStages builds a case's stage split from the publisher's and the
// subscribers' stamps; nil when the publisher or every subscriber sent
// none.
func JoinStages(pub *StageStamps, subs []*StageStamps) *report.StageSplit {
	if pub == nil {
		return nil
	}
	wake, cb := report.NewHistogram(), report.NewHistogram()
	var joined int64
	for _, s := range subs {
		if s == nil {
			continue
		}
		if s.Callback != nil {
			cb.Merge(s.Callback)
		}
		for i, w := range s.Offsets {
			seq := s.FirstSeq + uint64(i)
			if seq < pub.FirstSeq || w == StageUnstamped {
				continue
			}
			j := seq - pub.FirstSeq
			if j >= uint64(len(pub.Offsets)) || pub.Offsets[j] == StageUnstamped {
				continue
			}
			wake.Record(int64(w) - int64(pub.Offsets[j])) // below 0 clamps to 0 and is counted
			joined++
		}
	}
	if joined == 0 && cb.Count() == 0 {
		return nil
	}
	st := &report.StageSplit{Count: joined, Wake: wake.Summary(), Callback: cb.Summary(), Method: MethodStages}
	if pub.Copy != nil && pub.Copy.Count() > 0 {
		st.Copy = pub.Copy.Summary()
	}
	return st
}
