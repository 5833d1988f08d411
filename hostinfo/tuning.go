package hostinfo

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/report"
)

// MethodTuning says where HostTuning comes from.
const MethodTuning = "/sys/devices/system/cpu/{isolated,nohz_full}; NIC IRQs from /sys/class/net/NIC/device[/..]/msi_irqs (or device/irq), names from /proc/interrupts, affinity from /proc/irq/N/smp_affinity_list"

// CollectTuning reads the host's real-time tuning under p. Unreadable
// parts stay empty (a VM has no nohz_full file; a virtual NIC has no IRQ);
// it never fails.
func CollectTuning(p EnvPaths) *report.HostTuning {
	t := &report.HostTuning{Method: MethodTuning}
	cpu := filepath.Join(p.Sys, "devices/system/cpu")
	t.Isolcpus = readTrim(filepath.Join(cpu, "isolated"))
	t.NohzFull = readTrim(filepath.Join(cpu, "nohz_full"))
	names := irqNames(filepath.Join(p.Proc, "interrupts"))
	nics, _ := os.ReadDir(filepath.Join(p.Sys, "class/net"))
	for _, n := range nics {
		dev := filepath.Join(p.Sys, "class/net", n.Name(), "device")
		if _, err := os.Stat(dev); err != nil {
			continue // virtual interface: no IRQ of its own
		}
		irqs := msiIRQs(filepath.Join(dev, "msi_irqs"))
		if len(irqs) == 0 {
			// virtio: the PCI function above owns them. Resolve the link
			// first: Join would clean ".." lexically.
			if real, err := filepath.EvalSymlinks(dev); err == nil {
				irqs = msiIRQs(filepath.Join(filepath.Dir(real), "msi_irqs"))
			}
		}
		if len(irqs) == 0 {
			if v, err := strconv.Atoi(readTrim(filepath.Join(dev, "irq"))); err == nil && v > 0 {
				irqs = []int{v}
			}
		}
		for _, q := range irqs {
			t.NICIRQs = append(t.NICIRQs, report.NICIRQ{NIC: n.Name(), IRQ: q, Name: names[q],
				Affinity: readTrim(filepath.Join(p.Proc, "irq", strconv.Itoa(q), "smp_affinity_list"))})
		}
	}
	return t
}

func msiIRQs(dir string) []int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if v, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// irqNames maps IRQ number → action name (last column of /proc/interrupts).
func irqNames(path string) map[int]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	m := map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		num, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 {
			m[n] = f[len(f)-1]
		}
	}
	return m
}
