package reporthtml_test

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/report/reporthtml"
)

// The why of a tail renders with the case: trace link and summary, the
// overhead, the counters with their method, an honest line where huge
// pages were asked for and not granted, the stage split and the tuning.
func TestRenderTraceCountersStages(t *testing.T) {
	r := fixedResult()
	c := &r.Cases[0]
	c.Trace = &report.TraceRef{File: "traces/case-0.json", Reason: "max 5.1ms > bound 1ms in window 3",
		Summary: "while seq 5 waited 5.075ms … CPU 1 ran: hlr-hog[23326] (RT, kernel prio 89) 5.013ms (99%)",
		CPUs:    []int{0, 1}, BufferKB: 1024, Method: "tracefs",
		Overhead: &report.TraceOverhead{OffP50Ns: 30_000, ArmedP50Ns: 32_000, OffP99Ns: 60_000, ArmedP99Ns: 66_000, Method: "same case, alternating"}}
	c.Counters = []report.EndpointCounters{{Endpoint: "sub on board-b", VoluntaryCtxSwitches: 1000, RunDelayNs: 4_321_000, GCCycles: 2, GCPauseTotalNs: 120_000, GCPauseMaxNs: 80_000,
		Method: "proc", Mappings: []report.MappingPages{
			{Path: "/dev/shm/hlr-a", KernelPageSizeKB: 4, MMUPageSizeKB: 4, Words: "4 KiB pages (no huge pages)", HugeRequested: true},
			{Path: "/anon_hugepage (deleted)", KernelPageSizeKB: 2048, MMUPageSizeKB: 2048, Words: "2 MiB hugetlb pages", HugeRequested: true}}}}
	c.Stages = &report.StageSplit{Count: 1000, Copy: report.Summary{P50: 1000, P99: 2000, Max: 3000}, Wake: report.Summary{P50: 9000}, Callback: report.Summary{P50: 4000}, Method: "stamps"}
	r.Run.Tuning = &report.HostTuning{Isolcpus: "1", NICIRQs: []report.NICIRQ{{NIC: "eth0", IRQ: 38, Name: "virtio2-input.0", Affinity: "1"}}, Method: "sysfs"}
	r.Run.Boards = []report.BoardInfo{{Name: "imx8", Tuning: &report.HostTuning{Isolcpus: "2-3", NohzFull: "3",
		NICIRQs: []report.NICIRQ{{NIC: "eth1", IRQ: 40, Name: "eth1-rx-0", Affinity: "2"}}}}, {Name: "bare"}, {Name: "netns", Tuning: &report.HostTuning{}}}
	var b bytes.Buffer
	if err := reporthtml.Render(&b, reporthtml.Input{Result: r}); err != nil {
		t.Fatal(err)
	}
	root := doc(t, b.Bytes())
	var link bool
	walk(root, func(n *html.Node) {
		if n.Data == "a" && attr(n, "href") == "traces/case-0.json" {
			link = true
		}
	})
	if !link {
		t.Error("no link to the trace JSON")
	}
	page := text(root)
	for _, want := range []string{"hlr-hog[23326]", "max 5.1ms > bound 1ms in window 3", "30.0µs off → 32.0µs armed",
		"huge pages were requested but not granted", "2 MiB hugetlb pages", "commit → wake", "publish-side copy",
		"isolcpus", "eth0 irq 38 virtio2-input.0 → CPUs 1", "≤ 80.0µs",
		"isolcpus 2-3, nohz_full 3", "eth1 irq 40 eth1-rx-0 → CPUs 2", "not reported", "4.32ms", "no NIC with its own IRQ in the board's view"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, "overhead was not measured in this run") {
		t.Error("the measured overhead is shown, not the how-to")
	}
	c.Trace.Overhead = nil
	b.Reset()
	if err := reporthtml.Render(&b, reporthtml.Input{Result: r}); err != nil {
		t.Fatal(err)
	}
	if p := text(doc(t, b.Bytes())); !strings.Contains(p, "overhead was not measured in this run") || !strings.Contains(p, "-bench TraceOverhead") {
		t.Error("a trace without a measured overhead does not say how to measure it")
	}
	if strings.Count(page, "huge pages were requested but not granted") != 1 {
		t.Error("the 2 MiB mapping must not be flagged")
	}
}
