package agent_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/hostinfo"
	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/report"
)

// The hello carries the board's environment (governor, isolcpus,
// nohz_full, NIC IRQ affinity), read from the agent's /proc and /sys: a
// fake tree here, so every field has a known value to compare.
func TestHelloCarriesBoardEnvironment(t *testing.T) {
	root := t.TempDir()
	p := hostinfo.EnvPaths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")}
	cpu := filepath.Join(p.Sys, "devices/system/cpu")
	testkit.WriteFile(t, filepath.Join(cpu, "online"), "0-3\n")
	testkit.WriteFile(t, filepath.Join(cpu, "isolated"), "2-3\n")
	testkit.WriteFile(t, filepath.Join(cpu, "nohz_full"), "3\n")
	testkit.WriteFile(t, filepath.Join(cpu, "cpu0/cpufreq/scaling_governor"), "performance\n")
	testkit.WriteFile(t, filepath.Join(cpu, "cpu1/cpufreq/scaling_governor"), "schedutil\n")
	testkit.WriteFile(t, filepath.Join(p.Proc, "cpuinfo"), "processor\t: 0\nmodel name\t: Fake CPU 9000\n")
	// A PCI NIC with two MSI-X vectors.
	testkit.WriteFile(t, filepath.Join(p.Sys, "class/net/eth1/device/msi_irqs/40"), "msix")
	testkit.WriteFile(t, filepath.Join(p.Sys, "class/net/eth1/device/msi_irqs/41"), "msix")
	testkit.WriteFile(t, filepath.Join(p.Proc, "interrupts"), "           CPU0\n 40:  1 PCI-MSIX eth1-rx-0\n 41:  2 PCI-MSIX eth1-tx-0\n")
	testkit.WriteFile(t, filepath.Join(p.Proc, "irq/40/smp_affinity_list"), "2\n")
	testkit.WriteFile(t, filepath.Join(p.Proc, "irq/41/smp_affinity_list"), "0-1\n")

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(context.Background(), inR, outW, &agent.Options{Board: "fake", Build: "test", EnvPaths: p})
		outW.Close()
	}()
	dec := agentproto.NewDecoder(outR)
	m, err := dec.Next()
	if err != nil {
		t.Fatal(err)
	}
	inW.Close() // EOF: the agent says bye and returns
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if err := <-done; err != nil {
		t.Fatalf("agent: %v", err)
	}
	h := m.Hello
	if m.Kind != agentproto.KindHello || h == nil {
		t.Fatalf("first message %+v", m)
	}
	if h.CPUGovernor != "performance,schedutil" || h.OnlineCPUs != "0-3" || h.CPUModel != "Fake CPU 9000" {
		t.Fatalf("hello env: governor %q online %q model %q", h.CPUGovernor, h.OnlineCPUs, h.CPUModel)
	}
	tu := h.Tuning
	if tu == nil || tu.Isolcpus != "2-3" || tu.NohzFull != "3" || tu.Method == "" {
		t.Fatalf("hello tuning %+v", tu)
	}
	want := []report.NICIRQ{{NIC: "eth1", IRQ: 40, Name: "eth1-rx-0", Affinity: "2"}, {NIC: "eth1", IRQ: 41, Name: "eth1-tx-0", Affinity: "0-1"}}
	if len(tu.NICIRQs) != 2 || tu.NICIRQs[0] != want[0] || tu.NICIRQs[1] != want[1] {
		t.Fatalf("NIC IRQs %+v, want %+v", tu.NICIRQs, want)
	}
}
