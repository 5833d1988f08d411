package steps

import (
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/report"
)

// TestReplayExplained: a replay is measured again only when some case
// failed and a disturbed host explains every failure: a p99 breach while
// the host woke 20 ms late is explained, a loss is not, and a replay
// whose cases all pass is not retried.
func TestReplayExplained(t *testing.T) {
	mk := func(name string, latency time.Duration, lost int64) *report.Case {
		h := report.NewHistogram()
		for range 100 {
			h.Record(int64(latency))
		}
		c := report.NewCase(nil, report.CaseSpec{Name: name, Bounds: &report.Bounds{P99: time.Millisecond, MaxLost: report.Loss(0)}},
			report.Results{Histogram: h, Sent: 100, Delivered: 100 - lost, Lost: lost})
		c.Finalize()
		return c
	}
	late := report.NewHistogram()
	late.Record(int64(20 * time.Millisecond))
	good, slow, lossy := mk("imu", 100*time.Microsecond, 0), mk("camera", 5*time.Millisecond, 0), mk("lidar", 100*time.Microsecond, 3)
	if slow.Verdict != report.Fail || lossy.Verdict != report.Fail || good.Verdict == report.Fail {
		t.Fatalf("fixture verdicts %s %s %s", good.Verdict, slow.Verdict, lossy.Verdict)
	}
	if why, ok := replayExplained(&ReplayRun{Topics: []*report.Case{good, slow}, Mix: good}, late); !ok || !strings.Contains(why, "camera: ") {
		t.Errorf("p99 breach on a late host: %q, %v; want explained", why, ok)
	}
	if _, ok := replayExplained(&ReplayRun{Topics: []*report.Case{slow, lossy}, Mix: good}, late); ok {
		t.Error("a loss was explained by the host")
	}
	if _, ok := replayExplained(&ReplayRun{Topics: []*report.Case{good}, Mix: good}, late); ok {
		t.Error("a passing replay was to be measured again")
	}
}
