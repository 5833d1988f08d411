package steps

import (
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/report"
)

func ranWith(name string, latency time.Duration, lost int64) *Ran {
	h := report.NewHistogram()
	for range 1000 {
		h.Record(int64(latency))
	}
	b := report.Bounds{P50: 10 * time.Microsecond, P99: 20 * time.Microsecond, MaxLost: report.Loss(0)}
	return &Ran{Case: &report.Case{Name: name, Histogram: h, Bounds: &b, Sent: 1000, Delivered: 1000 - lost, Lost: lost, Subscribers: 1}}
}

func loadFinal(reason string, threads int, cpu, wall time.Duration) *agentproto.Final {
	return &agentproto.Final{Role: agentproto.Load, Reason: reason,
		Load: &agentproto.LoadReport{Threads: threads, Kind: agentproto.LoadALU, CPUNs: int64(cpu), WallNs: int64(wall)}}
}

// The loaded case is never judged against the idle bounds (it would fail
// the 10 µs p50 here), carries the ratios and the load's figures, and
// fails only when it could not show the board under load or lost
// messages on a reliable flow.
func TestAnnotateLoaded(t *testing.T) {
	tests := []struct {
		name     string
		load     *agentproto.Final
		lost     int64
		verdict  report.Verdict
		failWith string
	}{
		{"load ran", loadFinal(agentproto.EndStopped, 2, 1800*time.Millisecond, time.Second), 0, report.NoBounds, ""},
		{"load starved", loadFinal(agentproto.EndStopped, 2, 300*time.Millisecond, time.Second), 0, report.Fail, "starved"}, // 15% of 2 cores
		{"load ended early", loadFinal(agentproto.EndDuration, 2, 1800*time.Millisecond, time.Second), 0, report.Fail, "before the flow"},
		{"reliable loss", loadFinal(agentproto.EndStopped, 2, 1800*time.Millisecond, time.Second), 3, report.Fail, "3 lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &UnderLoad{Idle: ranWith("x: idle", 5*time.Microsecond, 0), Loaded: ranWith("x: loaded", 50*time.Microsecond, tt.lost),
				Load: tt.load, Board: "board-b", Threads: 2}
			u.Share = float64(tt.load.Load.CPUNs) / (2 * float64(tt.load.Load.WallNs))
			annotateLoaded(u, "sim", true)
			lc := u.Loaded.Case
			if lc.Bounds != nil || lc.Verdict != tt.verdict || !strings.Contains(lc.Failure, tt.failWith) {
				t.Errorf("loaded case bounds %v verdict %s failure %q, want no bounds, %s, failure with %q", lc.Bounds, lc.Verdict, lc.Failure, tt.verdict, tt.failWith)
			}
			for _, ck := range lc.Checks {
				t.Errorf("loaded case carries check %s", ck.String())
			}
			if u.P50Ratio < 9 || u.P50Ratio > 11 || lc.Extra[report.ExtraP50Ratio] != u.P50Ratio || lc.Extra[report.ExtraP99Ratio] != u.P99Ratio {
				t.Errorf("ratios p50 %.2f p99 %.2f extra %v, want ≈10", u.P50Ratio, u.P99Ratio, lc.Extra)
			}
			if lc.Extra[report.ExtraLoadThreads] != 2 || lc.Extra[report.ExtraLoadCPUShare] != u.Share {
				t.Errorf("load extras %v", lc.Extra)
			}
			if !strings.Contains(strings.Join(lc.Notes, "\n"), NoteLoadedUnbounded) {
				t.Errorf("notes %q lack %q", lc.Notes, NoteLoadedUnbounded)
			}
			if ic := u.Idle.Case; ic.Bounds == nil || ic.Verdict != report.Pass {
				t.Errorf("idle case bounds %v verdict %s, want judged and passing", ic.Bounds, ic.Verdict)
			}
		})
	}
}
