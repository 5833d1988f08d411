package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilrig/hilrig/report"
)

func TestWriteFileStoresTraceBeside(t *testing.T) {
	dir := t.TempDir()
	r := report.NewResult(report.RunInfo{})
	r.Cases = []report.Case{{Name: "a"}, {Name: "b", Trace: &report.TraceRef{Reason: "worst window", Chrome: []byte(`{"traceEvents":[]}`)}}}
	p := filepath.Join(dir, "result.json")
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	tr := back.Cases[1].Trace
	if tr == nil || tr.File != "result.traces/case-1.json" || tr.Chrome != nil {
		t.Fatalf("trace ref %+v", tr)
	}
	b, err := os.ReadFile(filepath.Join(dir, tr.File))
	if err != nil || string(b) != `{"traceEvents":[]}` {
		t.Fatalf("trace file: %q, %v", b, err)
	}
}

// A NIC IRQ whose affinity includes a pinned endpoint's CPU is a finding
// naming the NIC, the IRQ, the CPU and the endpoint; IRQs kept off the
// endpoints' CPUs, unreadable affinities and other hosts' endpoints are
// not, and an affinity that does not parse is said to be unknown.
func TestIRQOverlaps(t *testing.T) {
	tun := &report.HostTuning{NICIRQs: []report.NICIRQ{
		{NIC: "eth0", IRQ: 38, Name: "virtio2-input.0", Affinity: "1"},
		{NIC: "eth0", IRQ: 39, Name: "virtio2-output.0", Affinity: "0-3"},
		{NIC: "eth1", IRQ: 40, Affinity: "2,4-5"},
		{NIC: "eth2", IRQ: 41, Affinity: ""},      // unreadable: no finding
		{NIC: "eth3", IRQ: 42, Affinity: "3-x"},   // unparseable
		{NIC: "eth4", IRQ: 43, Affinity: "0,6-7"}, // no pinned CPU
	}}
	got := report.IRQOverlaps(tun, []report.PinnedEndpoint{
		{Endpoint: "f-sub0", Host: "b1", CPU: 1},
		{Endpoint: "f-pub", Host: "b1", CPU: 5},
	})
	want := []string{
		"NIC eth0 IRQs 38 (virtio2-input.0) affinity 1, 39 (virtio2-output.0) affinity 0-3 may be handled on CPU 1 of b1, where endpoint f-sub0 is pinned: " +
			"the interrupt and its softirq preempt the endpoint whatever its priority (move them off CPU 1: /proc/irq/N/smp_affinity_list)",
		`IRQ 42 of NIC eth3 on b1: smp_affinity_list "3-x" unreadable (bad CPU range "3-x"); whether it can preempt f-sub0 on CPU 1 is unknown`,
		"NIC eth1 IRQ 40 affinity 2,4-5 may be handled on CPU 5 of b1, where endpoint f-pub is pinned: " +
			"the interrupt and its softirq preempt the endpoint whatever its priority (move it off CPU 5: /proc/irq/N/smp_affinity_list)",
		`IRQ 42 of NIC eth3 on b1: smp_affinity_list "3-x" unreadable (bad CPU range "3-x"); whether it can preempt f-pub on CPU 5 is unknown`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("finding %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if f := report.IRQOverlaps(tun, []report.PinnedEndpoint{{Endpoint: "e", Host: "b1", CPU: 6}}); len(f) != 2 || !strings.Contains(f[0], "NIC eth4 IRQ 43") || !strings.Contains(f[1], "IRQ 42 of NIC eth3") {
		t.Errorf("CPU 6 in 0,6-7: %q", f)
	}
	if f := report.IRQOverlaps(nil, []report.PinnedEndpoint{{Endpoint: "e", CPU: 1}}); f != nil {
		t.Errorf("no tuning: %q", f)
	}
}
