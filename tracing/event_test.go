package tracing

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const sample = `# tracer: nop
#
     Web Content-812     [001] d..2.   100.000100: sched_switch: prev_comm=Web Content prev_pid=812 prev_prio=120 prev_state=S ==> next_comm=hog-x next_pid=900 next_prio=89
           hog-x-900     [001] d.h1.   100.000200: irq_handler_entry: irq=24 name=virtio0-input.0
           hog-x-900     [001] d.h1.   100.000205: irq_handler_exit: irq=24 ret=handled
           hog-x-900     [001] ..s1.   100.000300: softirq_entry: vec=1 [action=TIMER]
           hog-x-900     [001] ..s1.   100.000310: softirq_exit: vec=1 [action=TIMER]
          sender-700     [000] .....   100.000150: tracing_mark_write: hlr send seq=3
          sender-700     [000] d..4.   100.000160: sched_wakeup: comm=recv pid=701 prio=120 target_cpu=001
           hog-x-900     [001] d..2.   100.005100: sched_switch: prev_comm=hog-x prev_pid=900 prev_prio=89 prev_state=S ==> next_comm=recv next_pid=701 next_prio=120
            recv-701     [001] .....   100.005120: tracing_mark_write: hlr recv seq=3
`

func TestParseExplainChrome(t *testing.T) {
	evs, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 9 {
		t.Fatalf("parsed %d events, want 9", len(evs))
	}
	if e := evs[0]; e.Kind != Switch || e.PrevComm != "Web Content" || e.NextPID != 900 || e.Ns != 100_000_100_000 || e.CPU != 1 || e.Comm != "Web Content" {
		t.Fatalf("switch decoded as %+v", e)
	}
	if e := evs[1]; e.Kind != IRQEntry || e.IRQ != 24 || e.Name != "virtio0-input.0" {
		t.Fatalf("irq decoded as %+v", e)
	}
	if e := evs[3]; e.Kind != SoftirqEntry || e.Name != "TIMER" || e.IRQ != 1 {
		t.Fatalf("softirq decoded as %+v", e)
	}
	x := Explain(evs, Window{CPU: 1, FromNs: 100_000_150_000, ToNs: 100_005_120_000, WaiterPID: 701, Label: "seq 3"})
	if len(x.Ran) != 2 || x.Ran[0].Comm != "hog-x" || x.Ran[0].Ns != 4_950_000 || x.Ran[1].Comm != "recv" || x.Ran[1].Ns != 20_000 {
		t.Fatalf("ran: %+v", x.Ran)
	}
	if x.WokenNs != 100_000_160_000 || x.RunNs != 100_005_100_000 || !x.Covered {
		t.Fatalf("woken %d run %d covered %v", x.WokenNs, x.RunNs, x.Covered)
	}
	s := x.String()
	for _, want := range []string{"hog-x[900] (RT, kernel prio 89) 4.95ms", "virtio0-input.0 (irq 24) ×1 (5µs)", "TIMER ×1 (10µs)", "runnable but waiting 4.94ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q: %s", want, s)
		}
	}
	var buf bytes.Buffer
	if err := WriteChrome(&buf, evs); err != nil {
		t.Fatal(err)
	}
	checkChrome(t, buf.Bytes(), "hog-x", "hlr recv seq=3")
}

// A kernel without CONFIG_KALLSYMS (the vm board's) names a trace_marker
// write by its address: it is still a marker.
func TestParseMarkerWithoutKallsyms(t *testing.T) {
	evs, err := Parse([]byte("           <...>-59      [000] .....     1.423920: 0xffffffff810ab998: hlr probe seq=0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != Marker || evs[0].Text != "hlr probe seq=0" || evs[0].PID != 59 || evs[0].Ns != 1_423_920_000 {
		t.Fatalf("parsed %+v, want the marker hlr probe seq=0", evs)
	}
}

func TestParseRejectsBrokenKnownEvent(t *testing.T) {
	_, err := Parse([]byte("  a-1 [000] d..2. 1.000001: sched_switch: prev_comm=a prev_pid=x\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v, want a line-numbered error", err)
	}
}

func TestExplainUncoveredSaysPartial(t *testing.T) {
	evs, _ := Parse([]byte(sample))
	x := Explain(evs, Window{CPU: 1, FromNs: 99_000_000_000, ToNs: 100_005_120_000})
	if x.Covered || !strings.Contains(x.String(), "partial account") {
		t.Fatalf("window before the trace must be reported partial: %s", x)
	}
}

// On this VM the kernel recorded no sched_switch out of idle on CPU 1, so
// a task woken onto an idle CPU appears only when it leaves. Explain and
// Chrome credited its whole run to idle ("swapper ran 4.7 ms" while an RT
// hog held the CPU); they now credit it from its wake-up onto the CPU.
func TestMissingSwitchInCreditedFromWakeup(t *testing.T) {
	const ms = int64(time.Millisecond)
	evs := []Event{
		{Ns: 0, CPU: 1, Kind: Switch, PrevComm: "hlr-hog", PrevPID: 7, PrevPrio: 89, PrevState: "S", NextComm: "swapper/1", NextPID: 0, NextPrio: 120},
		{Ns: 1 * ms, CPU: 1, Kind: Wakeup, NextComm: "hlr-hog", NextPID: 7, NextPrio: 89, TargetCPU: 1},
		{Ns: 2 * ms, CPU: 0, Kind: Wakeup, NextComm: "rx", NextPID: 9, NextPrio: 94, TargetCPU: 1},
		// no "swapper/1 ==> hlr-hog" here
		{Ns: 6 * ms, CPU: 1, Kind: Switch, PrevComm: "hlr-hog", PrevPID: 7, PrevPrio: 89, PrevState: "Z", NextComm: "rx", NextPID: 9, NextPrio: 94},
	}
	x := Explain(evs, Window{CPU: 1, FromNs: 0, ToNs: 6 * ms, WaiterPID: 9})
	if len(x.Ran) == 0 || x.Ran[0].Comm != "hlr-hog" || x.Ran[0].Ns != 5*ms {
		t.Fatalf("ran %+v, want hlr-hog first for 5ms", x.Ran)
	}
	var hog float64
	for _, e := range Chrome(evs).TraceEvents {
		if e.Name == "hlr-hog" && e.Ph == "X" {
			hog += e.Dur
		}
	}
	if hog != 5000 { // µs
		t.Fatalf("trace-event slices of hlr-hog last %v µs, want 5000", hog)
	}
}
