package report

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MethodTuning says where HostTuning comes from.
const MethodTuning = "/sys/devices/system/cpu/{isolated,nohz_full}; NIC IRQs from /sys/class/net/NIC/device[/..]/msi_irqs (or device/irq), names from /proc/interrupts, affinity from /proc/irq/N/smp_affinity_list"

// CollectTuning reads the host's real-time tuning under p. Unreadable
// parts stay empty (a VM has no nohz_full file; a virtual NIC has no IRQ);
// it never fails.
func CollectTuning(p EnvPaths) *HostTuning {
	t := &HostTuning{Method: MethodTuning}
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
			t.NICIRQs = append(t.NICIRQs, NICIRQ{NIC: n.Name(), IRQ: q, Name: names[q],
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

// PinnedEndpoint is an endpoint whose hot loop is pinned to one CPU of a
// host (agentproto.Start.CPU).
type PinnedEndpoint struct {
	Endpoint string // e.g. "flow-sub0"
	Host     string // the board it runs on, for the finding's words
	CPU      int
}

// IRQOverlaps returns a finding for each NIC whose IRQs may be handled on
// the CPU an endpoint of the same host is pinned to (the CPU is in the
// IRQ's smp_affinity_list): such an interrupt and the softirq it raises
// preempt the endpoint, whatever its real-time priority, which is a tail
// cause the IRQ masks alone leave to the reader to work out. One finding
// per endpoint and NIC, naming the IRQs; an affinity that cannot be
// parsed is named as such instead of being guessed at. t nil: none.
func IRQOverlaps(t *HostTuning, eps []PinnedEndpoint) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, ep := range eps {
		type nicHits struct {
			nic  string
			irqs []string
		}
		var hits []nicHits
		var unknown []string
		for _, q := range t.NICIRQs {
			if q.Affinity == "" {
				continue // unreadable: CollectTuning left it empty
			}
			cpus, err := parseCPUList(q.Affinity)
			if err != nil {
				unknown = append(unknown, fmt.Sprintf("IRQ %d of NIC %s on %s: smp_affinity_list %q unreadable (%v); whether it can preempt %s on CPU %d is unknown",
					q.IRQ, q.NIC, ep.Host, q.Affinity, err, ep.Endpoint, ep.CPU))
				continue
			}
			if !slices.Contains(cpus, ep.CPU) {
				continue
			}
			s := strconv.Itoa(q.IRQ)
			if q.Name != "" {
				s += " (" + q.Name + ")"
			}
			s += " affinity " + q.Affinity
			if i := slices.IndexFunc(hits, func(h nicHits) bool { return h.nic == q.NIC }); i >= 0 {
				hits[i].irqs = append(hits[i].irqs, s)
			} else {
				hits = append(hits, nicHits{q.NIC, []string{s}})
			}
		}
		for _, h := range hits {
			word, pron := "IRQ", "it"
			if len(h.irqs) > 1 {
				word, pron = "IRQs", "them"
			}
			out = append(out, fmt.Sprintf("NIC %s %s %s may be handled on CPU %d of %s, where endpoint %s is pinned: "+
				"the interrupt and its softirq preempt the endpoint whatever its priority (move %s off CPU %d: /proc/irq/N/smp_affinity_list)",
				h.nic, word, strings.Join(h.irqs, ", "), ep.CPU, ep.Host, ep.Endpoint, pron, ep.CPU))
		}
		out = append(out, unknown...)
	}
	return out
}

// parseCPUList parses a kernel CPU list such as "0-3,8,10-11" (cpuset(7)
// list format; "" is no CPU).
func parseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU %q", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU range %q", part)
			}
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("CPU range %q too wide", part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
