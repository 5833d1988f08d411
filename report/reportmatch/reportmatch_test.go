package reportmatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega/types"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reportmatch"
)

func testCase(lost int64) *report.Case {
	h := report.NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		h.Record(i * 1000) // 1µs .. 1ms
	}
	c := &report.Case{Name: "udp 1KiB", Suite: "latency", Sent: 1000 + lost, Delivered: 1000, Lost: lost,
		Method: report.Method{Kind: report.OneWay, Clocks: "PHC eth0, ptp4l locked", UncertaintyNs: 120}, Histogram: h}
	c.Finalize()
	return c
}

// wholeLine are the fragments every failure message must carry.
var wholeLine = []string{"count=1000", "min=", "p50=", "p90=", "p99=", "p99.9=", "max=", "mean=", "stddev=", "lost=", "one-way", "±120ns"}

func TestMatchers(t *testing.T) {
	ok, lossy := testCase(0), testCase(7)
	tests := []struct {
		name    string
		m       types.GomegaMatcher
		actual  any
		match   bool
		message []string // fragments of FailureMessage (when !match) or NegatedFailureMessage (when match)
	}{
		{"p99 pass", reportmatch.HaveP99Below(2 * time.Millisecond), ok, true, []string{"not to have p99 below 2.00ms", "p99 = 99"}},
		{"p99 fail", reportmatch.HaveP99Below(500 * time.Microsecond), ok, false, []string{`case "latency/udp 1KiB"`, "to have p99 below 500µs, but p99 = 99"}},
		{"p999 fail", reportmatch.HaveP999Below(900 * time.Microsecond), ok, false, []string{"p99.9 = 99"}},
		{"p50 pass", reportmatch.HaveP50Below(time.Millisecond), ok, true, nil},
		{"p50 fail", reportmatch.HaveP50Below(100 * time.Microsecond), ok, false, []string{"p50 = 50"}},
		{"max fail", reportmatch.HaveMaxBelow(time.Millisecond), ok, false, []string{"max = 1.00ms"}},
		{"max pass value case", reportmatch.HaveMaxBelow(2 * time.Millisecond), *ok, true, nil},
		{"jitter fail", reportmatch.HaveJitterBelow(10 * time.Microsecond), ok, false, []string{"jitter (p99−p50) = 4"}},
		{"jitter pass summary", reportmatch.HaveJitterBelow(time.Millisecond), ok.Summary, true, nil},
		{"no loss pass", reportmatch.HaveNoLoss(), ok, true, []string{"lost = 0 of 1000 sent"}},
		{"no loss fail", reportmatch.HaveNoLoss(), lossy, false, []string{"to have no loss, but lost = 7 of 1007 sent", "lost=7"}},
		{"loss at most pass", reportmatch.HaveLossAtMost(7), lossy, true, nil},
		{"loss at most fail", reportmatch.HaveLossAtMost(6), lossy, false, []string{"at most 6", "lost = 7"}},
		{"empty fails", reportmatch.HaveP99Below(time.Hour), &report.Case{Name: "e"}, false, []string{"has no samples"}},
		{"idle no-loss fails", reportmatch.HaveNoLoss(), &report.Case{Name: "e"}, false, []string{"nothing was sent"}},
		{"meet bounds fail", reportmatch.MeetBounds(), func() *report.Case {
			c := testCase(0)
			c.Bounds = &report.Bounds{P99: 100 * time.Microsecond, MaxLost: report.Loss(0)}
			c.Finalize()
			return c
		}(), false, []string{"verdict fail", "p99 ", "lost 0 ≤ 0: pass"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.m.Match(tc.actual)
			if err != nil {
				t.Fatalf("Match error: %v", err)
			}
			if got != tc.match {
				t.Fatalf("Match = %v, want %v (message: %s)", got, tc.match, tc.m.FailureMessage(tc.actual))
			}
			msg := tc.m.NegatedFailureMessage(tc.actual)
			if !tc.match {
				msg = tc.m.FailureMessage(tc.actual)
			}
			for _, frag := range tc.message {
				if !strings.Contains(msg, frag) {
					t.Errorf("message lacks %q:\n%s", frag, msg)
				}
			}
			if _, isCase := tc.actual.(*report.Case); isCase && tc.actual.(*report.Case).Summary.Count > 0 {
				for _, frag := range wholeLine {
					if !strings.Contains(msg, frag) {
						t.Errorf("message lacks distribution fragment %q:\n%s", frag, msg)
					}
				}
			}
		})
	}
}

func TestMatcherTypeErrors(t *testing.T) {
	if _, err := reportmatch.HaveP99Below(time.Second).Match(42); err == nil || !strings.Contains(err.Error(), "int") {
		t.Errorf("int actual: err = %v", err)
	}
	if _, err := reportmatch.HaveNoLoss().Match(report.Summary{Count: 1}); err == nil || !strings.Contains(err.Error(), "needs a *report.Case") {
		t.Errorf("summary for loss: err = %v", err)
	}
	var nilCase *report.Case
	if _, err := reportmatch.HaveMaxBelow(time.Second).Match(nilCase); err == nil {
		t.Error("nil case: no error")
	}
}

func TestMessageExample(t *testing.T) {
	c := testCase(2)
	m := reportmatch.HaveP99Below(500 * time.Microsecond)
	if ok, _ := m.Match(c); ok {
		t.Fatal("unexpected pass")
	}
	t.Logf("example failure message:\n%s", m.FailureMessage(c))
}
