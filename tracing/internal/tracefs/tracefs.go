// Package tracefs is the tracing package's only contact with the kernel's
// tracefs: it mounts tracefs when nothing has, makes a private trace
// instance (its own bounded ring buffer, so concurrent users of the global
// buffer are not disturbed), enables the scheduler and IRQ events, writes
// trace_marker lines and reads the buffer back as text.
package tracefs

// Events enabled in every instance: scheduler switches and wake-ups, hard
// IRQ handlers and softirqs. trace_marker writes need no event.
var Events = []string{
	"sched/sched_switch",
	"sched/sched_wakeup",
	"irq/irq_handler_entry",
	"irq/irq_handler_exit",
	"irq/softirq_entry",
	"irq/softirq_exit",
}

// Options configures an instance.
type Options struct {
	// Name of the instance directory under instances/; must be unique on
	// the host (e.g. "hilrig-<pid>-<n>").
	Name string
	// CPUs restricts recording to these CPUs (tracing_cpumask); empty means
	// every CPU.
	CPUs []int
	// BufferKB is the ring buffer size per CPU in KiB (buffer_size_kb); the
	// whole instance holds at most BufferKB × len(CPUs) KiB. The buffer
	// overwrites its oldest events, so memory stays bounded.
	BufferKB int
	// ReapPrefix, when set, makes Open first remove the instances named
	// ReapPrefix<pid>-<n> whose owner is gone (ReapStale): an instance
	// outlives a process killed before it closed it, and keeps tracing
	// every scheduler switch and IRQ on the host.
	ReapPrefix string
}
