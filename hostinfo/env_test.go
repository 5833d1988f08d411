package hostinfo_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hilrig/hilrig/hostinfo"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report"
)

func TestCollectEnvFromFakeTree(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/sys/kernel/hostname", "board1\n")
	write("proc/sys/kernel/osrelease", "6.6.0\n")
	write("proc/sys/kernel/version", "#1 SMP PREEMPT_RT\n")
	write("proc/cpuinfo", "processor\t: 0\nmodel name\t: Fancy CPU @ 2GHz\n")
	write("proc/meminfo", "MemTotal:       1024 kB\n")
	write("sys/devices/system/cpu/online", "0-1\n")
	write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n")
	write("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n")
	ri := hostinfo.CollectEnvFrom(hostinfo.EnvPaths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")})
	want := map[string]string{"machine": ri.Machine, "kernel": ri.Kernel, "cpu": ri.CPUModel, "online": ri.OnlineCPUs, "gov": ri.CPUGovernor}
	exp := map[string]string{"machine": "board1", "kernel": "6.6.0 #1 SMP PREEMPT_RT", "cpu": "Fancy CPU @ 2GHz", "online": "0-1", "gov": "performance,powersave"}
	if !reflect.DeepEqual(want, exp) || ri.MemTotal != 1<<20 {
		t.Errorf("got %v mem %d, want %v", want, ri.MemTotal, exp)
	}
	// The real machine: at least the kernel is readable.
	if hostinfo.CollectEnv().Kernel == "" {
		t.Error("CollectEnv on this machine found no kernel release")
	}
}

func TestCollectTuningFakeTree(t *testing.T) {
	root := t.TempDir()
	p := hostinfo.EnvPaths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
	testkit.WriteFile(t, filepath.Join(p.Sys, "devices/system/cpu/isolated"), "2-3\n")
	testkit.WriteFile(t, filepath.Join(p.Sys, "devices/system/cpu/nohz_full"), "2-3\n")
	// virtio NIC: IRQs on the PCI function above the device.
	testkit.WriteFile(t, filepath.Join(p.Sys, "devices/pci/virtio2/uevent"), "")
	testkit.WriteFile(t, filepath.Join(p.Sys, "devices/pci/msi_irqs/38"), "msix")
	testkit.WriteFile(t, filepath.Join(p.Sys, "devices/pci/msi_irqs/39"), "msix")
	if err := os.MkdirAll(filepath.Join(p.Sys, "class/net/eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(p.Sys, "devices/pci/virtio2"), filepath.Join(p.Sys, "class/net/eth0/device")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p.Sys, "class/net/lo"), 0o755); err != nil { // virtual: no device
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(p.Proc, "interrupts"), "           CPU0       CPU1\n 38:   0  8778 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n 39:  9493  0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n")
	testkit.WriteFile(t, filepath.Join(p.Proc, "irq/38/smp_affinity_list"), "1\n")
	testkit.WriteFile(t, filepath.Join(p.Proc, "irq/39/smp_affinity_list"), "0-1\n")
	tu := hostinfo.CollectTuning(p)
	if tu.Isolcpus != "2-3" || tu.NohzFull != "2-3" || tu.Method == "" {
		t.Fatalf("tuning %+v", tu)
	}
	want := []report.NICIRQ{{NIC: "eth0", IRQ: 38, Name: "virtio2-input.0", Affinity: "1"}, {NIC: "eth0", IRQ: 39, Name: "virtio2-output.0", Affinity: "0-1"}}
	if len(tu.NICIRQs) != 2 || tu.NICIRQs[0] != want[0] || tu.NICIRQs[1] != want[1] {
		t.Fatalf("NIC IRQs %+v, want %+v", tu.NICIRQs, want)
	}
}

func TestCollectTuningThisHost(t *testing.T) {
	tu := hostinfo.CollectTuning(hostinfo.EnvPaths{Proc: "/proc", Sys: "/sys"})
	for _, q := range tu.NICIRQs {
		if q.NIC == "lo" || q.IRQ <= 0 {
			t.Fatalf("bad NIC IRQ %+v", q)
		}
	}
	t.Logf("%+v", tu)
}
