package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/report"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCollectTuningFakeTree(t *testing.T) {
	root := t.TempDir()
	p := report.EnvPaths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
	write(t, filepath.Join(p.Sys, "devices/system/cpu/isolated"), "2-3\n")
	write(t, filepath.Join(p.Sys, "devices/system/cpu/nohz_full"), "2-3\n")
	// virtio NIC: IRQs on the PCI function above the device.
	write(t, filepath.Join(p.Sys, "devices/pci/virtio2/uevent"), "")
	write(t, filepath.Join(p.Sys, "devices/pci/msi_irqs/38"), "msix")
	write(t, filepath.Join(p.Sys, "devices/pci/msi_irqs/39"), "msix")
	if err := os.MkdirAll(filepath.Join(p.Sys, "class/net/eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(p.Sys, "devices/pci/virtio2"), filepath.Join(p.Sys, "class/net/eth0/device")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p.Sys, "class/net/lo"), 0o755); err != nil { // virtual: no device
		t.Fatal(err)
	}
	write(t, filepath.Join(p.Proc, "interrupts"), "           CPU0       CPU1\n 38:   0  8778 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n 39:  9493  0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n")
	write(t, filepath.Join(p.Proc, "irq/38/smp_affinity_list"), "1\n")
	write(t, filepath.Join(p.Proc, "irq/39/smp_affinity_list"), "0-1\n")
	tu := report.CollectTuning(p)
	if tu.Isolcpus != "2-3" || tu.NohzFull != "2-3" || tu.Method == "" {
		t.Fatalf("tuning %+v", tu)
	}
	want := []report.NICIRQ{{NIC: "eth0", IRQ: 38, Name: "virtio2-input.0", Affinity: "1"}, {NIC: "eth0", IRQ: 39, Name: "virtio2-output.0", Affinity: "0-1"}}
	if len(tu.NICIRQs) != 2 || tu.NICIRQs[0] != want[0] || tu.NICIRQs[1] != want[1] {
		t.Fatalf("NIC IRQs %+v, want %+v", tu.NICIRQs, want)
	}
}

func TestCollectTuningThisHost(t *testing.T) {
	tu := report.CollectTuning(report.EnvPaths{Proc: "/proc", Sys: "/sys"})
	for _, q := range tu.NICIRQs {
		if q.NIC == "lo" || q.IRQ <= 0 {
			t.Fatalf("bad NIC IRQ %+v", q)
		}
	}
	t.Logf("%+v", tu)
}

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
