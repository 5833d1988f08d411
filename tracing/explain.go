package tracing

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Window is the span a late message waited: from its send to its receive
// (CLOCK_MONOTONIC ns), on the receiver's CPU.
type Window struct {
	CPU    int   `json:"cpu"`
	FromNs int64 `json:"from_ns"`
	ToNs   int64 `json:"to_ns"`
	// WaiterPID is the receiving thread's TID (0: unknown); with it the
	// explanation says when it was woken and when it got the CPU.
	WaiterPID int `json:"waiter_pid,omitempty"`
	// Label names the message, e.g. "seq 1042".
	Label string `json:"label,omitempty"`
}

// Occupant is a task that held the CPU during the window, and for how long.
type Occupant struct {
	Comm string `json:"comm"`
	PID  int    `json:"pid"`
	// Prio is the kernel priority from sched_switch: below 100 is a
	// real-time (SCHED_FIFO/RR) task.
	Prio int   `json:"prio"`
	Ns   int64 `json:"ns"`
}

// IRQStat counts one hard IRQ line or softirq vector within the window.
type IRQStat struct {
	Soft  bool   `json:"soft,omitempty"`
	IRQ   int    `json:"irq"`
	Name  string `json:"name"`
	Count int    `json:"count"`
	Ns    int64  `json:"ns"` // summed handler time (entry → exit)
}

// Explanation is what the trace says happened on the window's CPU.
type Explanation struct {
	Window Window     `json:"window"`
	Ran    []Occupant `json:"ran"`  // longest first
	IRQs   []IRQStat  `json:"irqs"` // hard IRQs then softirqs, longest first
	// WokenNs / RunNs are when the waiter was woken and when it was next
	// switched in (0: not seen in the trace).
	WokenNs int64 `json:"woken_ns,omitempty"`
	RunNs   int64 `json:"run_ns,omitempty"`
	// Covered is false when the trace starts after the window does (the
	// bounded buffer had already overwritten its start).
	Covered bool `json:"covered"`
}

// Explain accounts for the window's CPU from the events (any order): who
// ran and for how long (clipped to the window), which IRQs and softirqs
// fired, and when the waiter was woken and ran.
func Explain(evs []Event, w Window) Explanation {
	x := Explanation{Window: w}
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(a, b Event) int { return cmp.Compare(a.Ns, b.Ns) })
	if len(sorted) > 0 && sorted[0].Ns <= w.FromNs {
		x.Covered = true
	}
	type key struct {
		comm string
		pid  int
	}
	ran := map[key]*Occupant{}
	var curKnown bool
	var cur Occupant
	last := w.FromNs
	credit := func(o Occupant, from, to int64) {
		from, to = max(from, w.FromNs), min(to, w.ToNs)
		if to <= from {
			return
		}
		k := key{o.Comm, o.PID}
		if ran[k] == nil {
			ran[k] = &Occupant{Comm: o.Comm, PID: o.PID, Prio: o.Prio}
		}
		ran[k].Ns += to - from
	}
	type irqKey struct {
		soft bool
		irq  int
	}
	irqs := map[irqKey]*IRQStat{}
	open := map[irqKey]int64{}
	wokeOnto := wakes{}
	for _, e := range sorted {
		if e.CPU != w.CPU && e.Kind != Wakeup {
			continue
		}
		switch e.Kind {
		case Switch:
			if e.Ns > w.FromNs {
				// The leaving task's comm and prio are as of now; the
				// entering side was recorded before any rename or
				// priority change during its run.
				prev := Occupant{Comm: e.PrevComm, PID: e.PrevPID, Prio: e.PrevPrio}
				switch {
				case !curKnown || cur.PID == e.PrevPID:
					credit(prev, last, e.Ns)
				default:
					// The switch that put prev on this CPU is missing
					// (the kernel records no sched_switch out of idle on
					// some CPUs: seen on this VM's CPU 1). prev surely ran
					// up to now; from its wake-up onto this CPU if one
					// was seen since, else since the last event known.
					from := wokeOnto.ranSince(w.CPU, e.PrevPID, last, e.Ns)
					credit(cur, last, from)
					credit(prev, from, e.Ns)
				}
			}
			cur, curKnown = Occupant{Comm: e.NextComm, PID: e.NextPID, Prio: e.NextPrio}, true
			last = max(e.Ns, w.FromNs)
			if w.WaiterPID != 0 && e.NextPID == w.WaiterPID && x.WokenNs != 0 && x.RunNs == 0 && e.Ns >= x.WokenNs {
				x.RunNs = e.Ns
			}
		case Wakeup:
			wokeOnto.note(e)
			if w.WaiterPID != 0 && e.NextPID == w.WaiterPID && e.Ns >= w.FromNs && e.Ns <= w.ToNs && x.WokenNs == 0 {
				x.WokenNs = e.Ns
			}
		case IRQEntry, SoftirqEntry:
			k := irqKey{e.Kind == SoftirqEntry, e.IRQ}
			if e.Ns < w.FromNs || e.Ns > w.ToNs {
				continue
			}
			if irqs[k] == nil {
				irqs[k] = &IRQStat{Soft: k.soft, IRQ: e.IRQ, Name: e.Name}
			}
			irqs[k].Count++
			open[k] = e.Ns
		case IRQExit, SoftirqExit:
			k := irqKey{e.Kind == SoftirqExit, e.IRQ}
			if t, ok := open[k]; ok {
				irqs[k].Ns += e.Ns - t
				delete(open, k)
			}
		}
		if e.Ns > w.ToNs && e.Kind == Switch {
			break
		}
	}
	if curKnown {
		credit(cur, last, w.ToNs)
	}
	for _, o := range ran {
		x.Ran = append(x.Ran, *o)
	}
	slices.SortFunc(x.Ran, func(a, b Occupant) int { return cmp.Or(cmp.Compare(b.Ns, a.Ns), cmp.Compare(a.PID, b.PID)) })
	for _, s := range irqs {
		x.IRQs = append(x.IRQs, *s)
	}
	slices.SortFunc(x.IRQs, func(a, b IRQStat) int {
		if a.Soft != b.Soft {
			if a.Soft {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.Ns, a.Ns), cmp.Compare(a.IRQ, b.IRQ))
	})
	return x
}

func dur(ns int64) string { return time.Duration(ns).Round(time.Microsecond).String() }

// String says it in words, e.g. "while seq 7 waited 5.021ms (send →
// receive, CLOCK_MONOTONIC, tracefs ±1µs), CPU 1 ran: hlr-hog[812] (RT,
// prio 89) 4.998ms (99%), … ; the receiver was woken after 12µs and got the
// CPU after 5.001ms; hard IRQs: none; softirqs: TIMER ×2 (9µs)".
func (x Explanation) String() string {
	w := x.Window
	span := w.ToNs - w.FromNs
	var b strings.Builder
	label := w.Label
	if label == "" {
		label = "the message"
	}
	fmt.Fprintf(&b, "while %s waited %s (send → receive, CLOCK_MONOTONIC, tracefs ±1µs), CPU %d ran: ", label, dur(span), w.CPU)
	if len(x.Ran) == 0 {
		b.WriteString("nothing recorded")
	}
	for i, o := range x.Ran {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 5 {
			fmt.Fprintf(&b, "%d more", len(x.Ran)-i)
			break
		}
		rt := ""
		if o.Prio < 100 {
			rt = fmt.Sprintf(" (RT, kernel prio %d)", o.Prio)
		}
		pct := 0.0
		if span > 0 {
			pct = 100 * float64(o.Ns) / float64(span)
		}
		fmt.Fprintf(&b, "%s[%d]%s %s (%.0f%%)", o.Comm, o.PID, rt, dur(o.Ns), pct)
	}
	if w.WaiterPID != 0 {
		switch {
		case x.WokenNs != 0 && x.RunNs != 0:
			fmt.Fprintf(&b, "; the receiver [%d] was woken after %s and got the CPU after %s (runnable but waiting %s)",
				w.WaiterPID, dur(x.WokenNs-w.FromNs), dur(x.RunNs-w.FromNs), dur(x.RunNs-x.WokenNs))
		case x.WokenNs != 0:
			fmt.Fprintf(&b, "; the receiver [%d] was woken after %s", w.WaiterPID, dur(x.WokenNs-w.FromNs))
		}
	}
	var hard, soft []string
	for _, s := range x.IRQs {
		if s.Soft {
			soft = append(soft, fmt.Sprintf("%s ×%d (%s)", s.Name, s.Count, dur(s.Ns)))
		} else {
			hard = append(hard, fmt.Sprintf("%s (irq %d) ×%d (%s)", s.Name, s.IRQ, s.Count, dur(s.Ns)))
		}
	}
	none := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ", ")
	}
	fmt.Fprintf(&b, "; hard IRQs: %s; softirqs: %s", none(hard), none(soft))
	if !x.Covered {
		b.WriteString(" (the trace buffer no longer held the window's start: partial account)")
	}
	return b.String()
}

// wakes remembers each task's last wake-up onto each CPU, for runs whose
// sched_switch in was not recorded (see Explain).
type wakes map[[2]int]int64

// note records e if it is a wake-up.
func (w wakes) note(e Event) {
	if e.Kind == Wakeup {
		w[[2]int{e.TargetCPU, e.NextPID}] = e.Ns
	}
}

// ranSince says since when pid, seen leaving cpu at now with no recorded
// switch in after last, ran there: from its wake-up onto cpu if one fell in
// [last, now], else from last.
func (w wakes) ranSince(cpu, pid int, last, now int64) int64 {
	if t, ok := w[[2]int{cpu, pid}]; ok && t >= last && t <= now {
		return t
	}
	return last
}
