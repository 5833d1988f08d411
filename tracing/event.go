package tracing

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Kind is the kind of a trace event.
type Kind uint8

// Event kinds.
const (
	Switch       Kind = iota + 1 // sched_switch
	Wakeup                       // sched_wakeup
	IRQEntry                     // irq_handler_entry
	IRQExit                      // irq_handler_exit
	SoftirqEntry                 // softirq_entry
	SoftirqExit                  // softirq_exit
	Marker                       // trace_marker write (tracing_mark_write)
)

var kindNames = map[string]Kind{
	"sched_switch": Switch, "sched_wakeup": Wakeup,
	"irq_handler_entry": IRQEntry, "irq_handler_exit": IRQExit,
	"softirq_entry": SoftirqEntry, "softirq_exit": SoftirqExit,
	"tracing_mark_write": Marker,
}

// Event is one decoded trace line. Comm/PID are the task current on CPU
// when the event was recorded; the other fields are set per Kind.
type Event struct {
	Ns   int64  `json:"ns"` // CLOCK_MONOTONIC, µs resolution
	CPU  int    `json:"cpu"`
	Kind Kind   `json:"kind"`
	Comm string `json:"comm"`
	PID  int    `json:"pid"`

	// Switch: the task leaving (Prev*) and the one entering (Next*).
	// Wakeup: the woken task in Next* and its target CPU in TargetCPU.
	PrevComm  string `json:"prev_comm,omitempty"`
	PrevPID   int    `json:"prev_pid,omitempty"`
	PrevPrio  int    `json:"prev_prio,omitempty"`
	PrevState string `json:"prev_state,omitempty"`
	NextComm  string `json:"next_comm,omitempty"`
	NextPID   int    `json:"next_pid,omitempty"`
	NextPrio  int    `json:"next_prio,omitempty"`
	TargetCPU int    `json:"target_cpu,omitempty"`
	// IRQ*: the IRQ number and (entry only) the handler name; Softirq*:
	// the vector number in IRQ and its name (e.g. "TIMER") in Name.
	IRQ  int    `json:"irq,omitempty"`
	Name string `json:"name,omitempty"`
	// Marker: the text written.
	Text string `json:"text,omitempty"`
}

// line: "<comm>-<pid> [<cpu>] <flags> <sec>.<usec>: <event>: <fields>";
// comm may hold spaces and dashes, the flags column may be absent. A
// trace_marker write is named by the writer's symbol, tracing_mark_write;
// a kernel without CONFIG_KALLSYMS (the vm board's) prints its address
// instead ("0xffffffff810ab998: hlr send seq=3"). The only events with an
// address there in an instance of the sched/irq events are those writes.
var lineRE = regexp.MustCompile(`^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+)\.(\d{6}): ([a-z_]+|0x[0-9a-f]+): (.*)$`)

// Parse decodes the text of a tracefs trace file. Comment lines and
// events of other kinds are skipped; a line that looks like an event of a
// known kind but does not decode is an error naming its line number.
func Parse(text []byte) ([]Event, error) {
	var evs []Event
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k, ok := kindNames[m[6]]
		if strings.HasPrefix(m[6], "0x") {
			k, ok = Marker, true
		}
		if !ok {
			continue
		}
		e := Event{Kind: k, Comm: m[1]}
		e.PID, _ = strconv.Atoi(m[2])
		e.CPU, _ = strconv.Atoi(m[3])
		sec, _ := strconv.ParseInt(m[4], 10, 64)
		us, _ := strconv.ParseInt(m[5], 10, 64)
		e.Ns = sec*1e9 + us*1e3
		if err := e.fields(m[7]); err != nil {
			return nil, fmt.Errorf("trace line %d (%q): %w", n, l, err)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return evs, nil
}

// between returns the text after key and before the next " "+stop (or the
// end when stop is ""); comms may contain spaces, so fields are cut at the
// next known key rather than at blanks.
func between(s, key, stop string) (string, bool) {
	i := strings.Index(s, key)
	if i < 0 {
		return "", false
	}
	s = s[i+len(key):]
	if stop == "" {
		if j := strings.IndexByte(s, ' '); j >= 0 {
			s = s[:j]
		}
		return s, true
	}
	j := strings.Index(s, " "+stop)
	if j < 0 {
		return "", false
	}
	return s[:j], true
}

func num(s, key string) (int, bool) {
	v, ok := between(s, key, "")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func (e *Event) fields(f string) error {
	var ok [4]bool
	switch e.Kind {
	case Switch:
		pre, post, found := strings.Cut(f, " ==> ")
		if !found {
			return fmt.Errorf("sched_switch without '==>'")
		}
		e.PrevComm, ok[0] = between(pre, "prev_comm=", "prev_pid=")
		e.PrevPID, ok[1] = num(pre, "prev_pid=")
		e.PrevPrio, _ = num(pre, "prev_prio=")
		e.PrevState, _ = between(pre, "prev_state=", "")
		e.NextComm, ok[2] = between(post, "next_comm=", "next_pid=")
		e.NextPID, ok[3] = num(post, "next_pid=")
		e.NextPrio, _ = num(post, "next_prio=")
	case Wakeup:
		e.NextComm, ok[0] = between(f, "comm=", "pid=")
		e.NextPID, ok[1] = num(f, "pid=")
		e.NextPrio, _ = num(f, "prio=")
		e.TargetCPU, ok[2] = num(f, "target_cpu=")
		ok[3] = true
	case IRQEntry:
		e.IRQ, ok[0] = num(f, "irq=")
		_, after, found := strings.Cut(f, "name=")
		e.Name, ok[1] = after, found
		ok[2], ok[3] = true, true
	case IRQExit:
		e.IRQ, ok[0] = num(f, "irq=")
		ok[1], ok[2], ok[3] = true, true, true
	case SoftirqEntry, SoftirqExit:
		e.IRQ, ok[0] = num(f, "vec=")
		if a, found := between(f, "[action=", ""); found {
			e.Name = strings.TrimSuffix(a, "]")
		}
		ok[1], ok[2], ok[3] = true, true, true
	case Marker:
		e.Text = strings.TrimRight(f, " \n")
		ok = [4]bool{true, true, true, true}
	}
	for i, o := range ok {
		if !o {
			return fmt.Errorf("field %d of %s missing or not a number", i, f)
		}
	}
	return nil
}
