package report

import (
	"maps"
	"slices"
)

// ExtraKey names a figure in Case.Extra. The keys a suite writes are the
// constants below (or TrendKey), so a reader (the middlewares table, a
// test) finds a figure by the same value its writer used. A result file
// may carry keys this build does not know (written by an older or newer
// build): they decode and render as they are.
type ExtraKey string

// The figures suites add to a case. The values are what result files
// have always carried: changing one breaks reading older files.
const (
	// ExtraDiscovery is the peer's or the startup case's discovery time,
	// p50 (ns): endpoints created → first matched reader.
	ExtraDiscovery ExtraKey = "discovery_ns"
	// ExtraDiscoveryMax is the startup case's largest discovery time (ns).
	ExtraDiscoveryMax ExtraKey = "discovery_max_ns"
	// ExtraColdStarts counts the startup case's cold starts.
	ExtraColdStarts ExtraKey = "cold_starts"

	// The load suite's comparison of a loaded case with its idle twin.
	ExtraIdleP50      ExtraKey = "idle p50 (ns)"
	ExtraIdleP99      ExtraKey = "idle p99 (ns)"
	ExtraP50Ratio     ExtraKey = "p50 loaded/idle"
	ExtraP99Ratio     ExtraKey = "p99 loaded/idle"
	ExtraLoadThreads  ExtraKey = "load threads"
	ExtraLoadCPUSec   ExtraKey = "load CPU time consumed (s)"
	ExtraLoadWallSec  ExtraKey = "load wall time (s)"
	ExtraLoadCPUShare ExtraKey = "load CPU share (CPU time / threads × wall)"

	// The host's timer wake-up lateness during a case (ns).
	ExtraHostWakeP99 ExtraKey = "host timer wake-up lateness during the case, p99 (ns)"
	ExtraHostWakeMax ExtraKey = "host timer wake-up lateness during the case, max (ns)"

	// The round-trip case's RTT quantiles (ns) and the clock-read
	// uncertainty it carries.
	ExtraRTTP50  ExtraKey = "rtt_p50_ns"
	ExtraRTTP99  ExtraKey = "rtt_p99_ns"
	ExtraRTTP999 ExtraKey = "rtt_p999_ns"
	ExtraRTTMax  ExtraKey = "rtt_max_ns"

	// The scope comparison's figures (ns unless named otherwise).
	ExtraScopeResolution  ExtraKey = "scope delay resolution ns"
	ExtraScopeDelays      ExtraKey = "scope delays"
	ExtraScopeP50         ExtraKey = "scope p50 ns"
	ExtraScopeP99         ExtraKey = "scope p99 ns"
	ExtraScopeDiffP50     ExtraKey = "scope − software p50 ns"
	ExtraScopeDiffP99     ExtraKey = "scope − software p99 ns"
	ExtraScopeKS          ExtraKey = "scope KS distance"
	ExtraScopeKSCritical  ExtraKey = "scope KS critical (α=0.05)"
	ExtraCaptureUnmatched ExtraKey = "capture unmatched edges"
	ExtraCaptureDropped   ExtraKey = "capture dropped edges"
	ExtraCaptureMerged    ExtraKey = "capture merged edges"

	// The fan-out suite's memory and latency growth.
	ExtraRSSGrowth        ExtraKey = "RSS floor growth, middle → last third (bytes)"
	ExtraHeapGrowth       ExtraKey = "Go live heap floor growth, middle → last third (bytes)"
	ExtraAllocPerDelivery ExtraKey = "subscriber agent Go allocation per delivery, last two thirds (bytes)"
	ExtraP99IncreaseVsOne ExtraKey = "p99 increase vs 1 subscriber (ns)"

	// The throughput suite's batching comparison.
	ExtraBatchingOffP99 ExtraKey = "batching off p99 (ns)"
	ExtraBatchingOnP99  ExtraKey = "batching on p99 (ns)"
	ExtraBatchingOffCPU ExtraKey = "batching off CPU (%)"
	ExtraBatchingOnCPU  ExtraKey = "batching on CPU (%)"

	// The faults suite's forged-fragment flood (UDP): throughput idle and
	// flooded, the flood, and the receiver's and publisher's counters
	// over it.
	ExtraIdleMsgsPerSec        ExtraKey = "idle msgs/s"
	ExtraFloodMsgsPerSec       ExtraKey = "flood msgs/s"
	ExtraFloodIdleRatio        ExtraKey = "flood/idle"
	ExtraForgedPerSec          ExtraKey = "forged datagrams/s"
	ExtraForgedSent            ExtraKey = "forged sent"
	ExtraReceiverUnconfirmed   ExtraKey = "receiver unconfirmed"
	ExtraReceiverUnknownWriter ExtraKey = "receiver unknown writer"
	ExtraReceiverPoolExhausted ExtraKey = "receiver pool exhausted"
	ExtraReceiverEvicted       ExtraKey = "receiver evicted"
	ExtraChallengesSent        ExtraKey = "challenges sent"
	ExtraPublisherTimeouts     ExtraKey = "publisher timeouts"
	ExtraPublisherRetransmits  ExtraKey = "publisher retransmits"
	// The faults suite's seeded fault layer's counts.
	ExtraFaultDropped    ExtraKey = "fault dropped"
	ExtraFaultDuplicated ExtraKey = "fault duplicated"
	ExtraFaultReordered  ExtraKey = "fault reordered"
	// The faults suite's process kills.
	ExtraResumeNs                 ExtraKey = "resume_ns"
	ExtraDeadEpochPublished       ExtraKey = "dead epoch published"
	ExtraReliableReleaseAfterKill ExtraKey = "reliable release after kill ns"

	// The bridge case (issue 33): the direct path's figures beside the
	// path through `hilrig bridge` (ns), through − direct (ns), the
	// bridge process's CPU (% of one CPU), and the seed's claim beside
	// them (000 §6: < 8 µs added, 1.2 % CPU at 1 kHz IMU, i.MX8M Plus).
	ExtraDirectP50      ExtraKey = "direct p50 (ns)"
	ExtraDirectP99      ExtraKey = "direct p99 (ns)"
	ExtraDirectMax      ExtraKey = "direct max (ns)"
	ExtraBridgeAddedP50 ExtraKey = "bridge added p50, through − direct (ns)"
	ExtraBridgeAddedP99 ExtraKey = "bridge added p99, through − direct (ns)"
	ExtraBridgeAddedMax ExtraKey = "bridge added max, through − direct (ns)"
	ExtraBridgeCPU      ExtraKey = "bridge process CPU (%)"
	// The bridge's own account (its health record): from its source's
	// receive stamp to its forward's return (ns), and what it forwarded.
	ExtraBridgeOwnP50    ExtraKey = "bridge's own added p50, receive → forwarded (ns)"
	ExtraBridgeOwnP99    ExtraKey = "bridge's own added p99, receive → forwarded (ns)"
	ExtraBridgeOwnMax    ExtraKey = "bridge's own added max, receive → forwarded (ns)"
	ExtraBridgeForwarded ExtraKey = "bridge forwarded"
	ExtraBridgeDropped   ExtraKey = "bridge dropped"
	ExtraSeedBridgeAdded ExtraKey = "seed claim: bridge added (ns)"
	ExtraSeedBridgeCPU   ExtraKey = "seed claim: bridge CPU (%)"

	// The soak's totals.
	ExtraUnobserved      ExtraKey = "sent but not observed (restart gaps, in flight at window edges)"
	ExtraFaultWindowLost ExtraKey = "lost in fault windows (board outages, not judged)"
	ExtraWindows         ExtraKey = "windows"
	ExtraUnlockedWindows ExtraKey = "unlocked_windows"
	ExtraFaultWindows    ExtraKey = "fault_windows"

	// A device under test's reaction (package dut): the correlation's
	// counts, and for a GPIO-wired program the wire's figure beside the
	// software one (ns).
	ExtraDUTMissed         ExtraKey = "dut missed"
	ExtraDUTMissRate       ExtraKey = "dut miss rate"
	ExtraDUTDuplicates     ExtraKey = "dut duplicate responses"
	ExtraDUTOutOfOrder     ExtraKey = "dut out-of-order responses"
	ExtraDUTLate           ExtraKey = "dut late responses"
	ExtraDUTUnknown        ExtraKey = "dut unknown responses"
	ExtraDUTRestarts       ExtraKey = "dut restarts"
	ExtraDUTGroundTruthP50 ExtraKey = "dut GPIO ground truth p50 ns"
	ExtraDUTGroundTruthN   ExtraKey = "dut GPIO ground truth pairs"
	ExtraDUTGroundTruthDif ExtraKey = "dut software − GPIO p50 ns"
)

// TrendKey is the Extra key of a soak trend's slope: subject per unit.
func TrendKey(subject, unit string) ExtraKey { return ExtraKey("trend " + subject + " (" + unit + ")") }

// Addition is what a spec or an explainer adds to a case after NewCase:
// notes, figures, checks judged elsewhere, or that the case is not judged
// against its bounds. By names the adder (a package-qualified function,
// "rig.explain"); Case.Add records it.
type Addition struct {
	By     string
	Notes  []string
	Extra  map[ExtraKey]float64
	Checks []Check
	// Unjudged drops the case's bounds and the checks added so far (a
	// peer's case, a loaded case judged against its idle twin instead).
	Unjudged bool
}

// Added is the record of one Addition in a case: who added what. It keeps
// counts and keys, not the values (those are in Notes, Extra and Checks).
type Added struct {
	By       string     `json:"by"`
	Notes    int        `json:"notes,omitempty"`
	Extra    []ExtraKey `json:"extra,omitempty"`
	Checks   []string   `json:"checks,omitempty"` // the checks' bounds
	Unjudged bool       `json:"unjudged,omitempty"`
}

// Noted is an Addition of notes only.
func Noted(by string, notes ...string) Addition { return Addition{By: by, Notes: notes} }

// Add is the one way to change a case's notes, figures and checks after
// NewCase (TestCaseAdditions in cmd/hilrig): it appends a's notes and
// checks, sets its figures (a later value of a key replaces an earlier
// one) and records, unless it adds nothing, the addition in c.Additions. Call Finalize after the
// last Add that carries checks or Unjudged, so the verdict counts them.
// Not safe for concurrent use.
func (c *Case) Add(a Addition) {
	if len(a.Notes) == 0 && len(a.Extra) == 0 && len(a.Checks) == 0 && !a.Unjudged {
		return // nothing added, nothing to record
	}
	rec := Added{By: a.By, Notes: len(a.Notes), Unjudged: a.Unjudged}
	if a.Unjudged {
		c.Bounds, c.Checks = nil, nil
	}
	c.Notes = append(c.Notes, a.Notes...)
	if len(a.Extra) > 0 {
		if c.Extra == nil {
			c.Extra = make(map[ExtraKey]float64, len(a.Extra))
		}
		maps.Copy(c.Extra, a.Extra)
		rec.Extra = slices.Sorted(maps.Keys(a.Extra))
	}
	for _, ck := range a.Checks {
		c.Checks = append(c.Checks, ck)
		rec.Checks = append(rec.Checks, ck.Bound)
	}
	c.Additions = append(c.Additions, rec)
}
