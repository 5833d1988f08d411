package tracing

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// ChromeEvent is one entry of the Chrome trace-event format (the JSON
// Perfetto and chrome://tracing open). Ts and Dur are microseconds.
type ChromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"` // "X" complete slice, "i" instant, "M" metadata
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"` // X only; 0 elsewhere
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	S    string         `json:"s,omitempty"` // instant scope
	Args map[string]any `json:"args,omitempty"`
}

// ChromeTrace is the JSON object form of the trace-event format.
type ChromeTrace struct {
	TraceEvents     []ChromeEvent  `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData,omitempty"`
}

// Tracks: one trace-event "process" per CPU, with a thread for the tasks
// that ran, one for hard IRQs and one for softirqs, so slices nest only
// within a track.
const (
	tidTasks   = 1
	tidIRQ     = 2
	tidSoftirq = 3
)

// Chrome converts events to trace-event form: per CPU, a slice per task
// occupancy (from sched_switch), per IRQ handler and per softirq, and
// instants for wake-ups and markers. Timestamps are CLOCK_MONOTONIC µs.
// An occupancy or handler open at the end of the events is closed there.
func Chrome(evs []Event) ChromeTrace {
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(a, b Event) int { return cmp.Compare(a.Ns, b.Ns) })
	t := ChromeTrace{DisplayTimeUnit: "ns", OtherData: map[string]any{
		"clock":  "CLOCK_MONOTONIC (tracefs trace_clock=mono)",
		"method": "Linux tracefs: sched_switch, sched_wakeup, irq_handler_entry/exit, softirq_entry/exit, trace_marker; µs resolution",
	}}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	type run struct {
		start int64
		comm  string
		pid   int
		prio  int
	}
	cur := map[int]*run{}
	wokeOnto := wakes{}
	type irqKey struct{ cpu, kind, irq int }
	open := map[irqKey]Event{}
	cpus := map[int]bool{}
	var end int64
	if len(sorted) > 0 {
		end = sorted[len(sorted)-1].Ns
	}
	for _, e := range sorted {
		cpus[e.CPU] = true
		switch e.Kind {
		case Switch:
			slice := func(r *run, to int64, state string) {
				t.TraceEvents = append(t.TraceEvents, ChromeEvent{Name: r.comm, Cat: "sched", Ph: "X", Ts: us(r.start), Dur: us(to - r.start),
					PID: e.CPU, TID: tidTasks, Args: map[string]any{"pid": r.pid, "prio": r.prio, "end_state": state}})
			}
			if r := cur[e.CPU]; r != nil {
				if r.pid == e.PrevPID { // comm and prio as of leaving (see Explain)
					r.comm, r.prio = e.PrevComm, e.PrevPrio
					slice(r, e.Ns, e.PrevState)
				} else {
					// The switch that put prev here is missing (see
					// Explain): r ran until prev's wake-up onto this CPU,
					// if one was seen since, and prev from then on.
					from := wokeOnto.ranSince(e.CPU, e.PrevPID, r.start, e.Ns)
					slice(r, from, "?")
					slice(&run{start: from, comm: e.PrevComm, pid: e.PrevPID, prio: e.PrevPrio}, e.Ns, e.PrevState)
				}
			}
			cur[e.CPU] = &run{start: e.Ns, comm: e.NextComm, pid: e.NextPID, prio: e.NextPrio}
		case Wakeup:
			wokeOnto.note(e)
			t.TraceEvents = append(t.TraceEvents, ChromeEvent{Name: "wakeup " + e.NextComm, Cat: "sched", Ph: "i", S: "t", Ts: us(e.Ns),
				PID: e.CPU, TID: tidTasks, Args: map[string]any{"pid": e.NextPID, "target_cpu": e.TargetCPU, "waker": e.Comm}})
		case IRQEntry, SoftirqEntry:
			open[irqKey{e.CPU, int(e.Kind), e.IRQ}] = e
		case IRQExit, SoftirqExit:
			k := irqKey{e.CPU, int(e.Kind) - 1, e.IRQ}
			if s, ok := open[k]; ok {
				t.TraceEvents = append(t.TraceEvents, irqSlice(s, e.Ns))
				delete(open, k)
			}
		case Marker:
			t.TraceEvents = append(t.TraceEvents, ChromeEvent{Name: e.Text, Cat: "marker", Ph: "i", S: "t", Ts: us(e.Ns),
				PID: e.CPU, TID: tidTasks, Args: map[string]any{"comm": e.Comm, "pid": e.PID}})
		}
	}
	for c, r := range cur {
		t.TraceEvents = append(t.TraceEvents, ChromeEvent{Name: r.comm, Cat: "sched", Ph: "X", Ts: us(r.start), Dur: us(end - r.start),
			PID: c, TID: tidTasks, Args: map[string]any{"pid": r.pid, "prio": r.prio, "end_state": "(trace ends)"}})
	}
	for _, s := range open {
		t.TraceEvents = append(t.TraceEvents, irqSlice(s, end))
	}
	ids := make([]int, 0, len(cpus))
	for c := range cpus {
		ids = append(ids, c)
	}
	slices.Sort(ids)
	for _, c := range ids {
		t.TraceEvents = append(t.TraceEvents,
			ChromeEvent{Name: "process_name", Ph: "M", PID: c, Args: map[string]any{"name": fmt.Sprintf("CPU %d", c)}},
			ChromeEvent{Name: "thread_name", Ph: "M", PID: c, TID: tidTasks, Args: map[string]any{"name": "tasks"}},
			ChromeEvent{Name: "thread_name", Ph: "M", PID: c, TID: tidIRQ, Args: map[string]any{"name": "hard IRQs"}},
			ChromeEvent{Name: "thread_name", Ph: "M", PID: c, TID: tidSoftirq, Args: map[string]any{"name": "softirqs"}})
	}
	slices.SortStableFunc(t.TraceEvents, func(a, b ChromeEvent) int { return cmp.Compare(a.Ts, b.Ts) })
	return t
}

func irqSlice(s Event, endNs int64) ChromeEvent {
	tid, name, cat := tidIRQ, fmt.Sprintf("irq %d %s", s.IRQ, s.Name), "irq"
	if s.Kind == SoftirqEntry {
		tid, name, cat = tidSoftirq, "softirq "+s.Name, "softirq"
	}
	return ChromeEvent{Name: name, Cat: cat, Ph: "X", Ts: float64(s.Ns) / 1e3, Dur: float64(endNs-s.Ns) / 1e3, PID: s.CPU, TID: tid}
}

// WriteChrome writes the events as trace-event JSON.
func WriteChrome(w io.Writer, evs []Event) error {
	if err := json.NewEncoder(w).Encode(Chrome(evs)); err != nil {
		return fmt.Errorf("write trace-event JSON: %w", err)
	}
	return nil
}
