package report

// The "why" of a tail: kernel trace snapshots, per-endpoint counters and
// the shared-memory stage split. Producers (agent, suites) fill these; the
// HTML report renders them next to the case. Every figure carries its
// method in a Method field.

// TraceRef is the kernel trace kept for one window of a case: the window
// that broke a bound, or the case's worst window.
type TraceRef struct {
	// File is the Chrome/Perfetto trace-event JSON, relative to the result
	// file's directory.
	File string `json:"file"`
	// Reason says why this window was kept, e.g. "max 5.1ms > bound 1ms in
	// window 3" or "worst window".
	Reason string `json:"reason"`
	// Summary says in words what ran on the receiver's CPU while the late
	// message waited, for how long, and which IRQs fired.
	Summary string `json:"summary"`
	// FromNs/ToNs bound the snapshot (CLOCK_MONOTONIC of the board).
	FromNs int64  `json:"from_ns"`
	ToNs   int64  `json:"to_ns"`
	Board  string `json:"board,omitempty"`
	CPUs   []int  `json:"cpus,omitempty"`
	// BufferKB is the trace ring buffer per CPU: the memory bound.
	BufferKB int    `json:"buffer_kb"`
	Method   string `json:"method"`
	// Overhead compares the same case with tracing armed and off.
	Overhead *TraceOverhead `json:"overhead,omitempty"`
	// Chrome is the trace-event JSON until Result.WriteFile stores it in
	// File (it is not kept in the result file itself).
	Chrome []byte `json:"-"`
}

// TraceOverhead is the latency cost of an armed trace, measured in one run.
type TraceOverhead struct {
	OffP50Ns   int64  `json:"off_p50_ns"`
	OffP99Ns   int64  `json:"off_p99_ns"`
	ArmedP50Ns int64  `json:"armed_p50_ns"`
	ArmedP99Ns int64  `json:"armed_p99_ns"`
	Method     string `json:"method"`
}

// EndpointCounters are one endpoint's process counters over a case.
type EndpointCounters struct {
	Endpoint               string `json:"endpoint"` // e.g. "pub on board-a"
	VoluntaryCtxSwitches   int64  `json:"voluntary_ctx_switches"`
	InvoluntaryCtxSwitches int64  `json:"involuntary_ctx_switches"`
	// RunDelayNs is the endpoint threads' time runnable but waiting for
	// a CPU over the case (schedstat), ns.
	RunDelayNs     int64 `json:"run_delay_ns,omitempty"`
	MinorFaults    int64 `json:"minor_faults"`
	MajorFaults    int64 `json:"major_faults"`
	GCCycles       int64 `json:"gc_cycles"`
	GCPauseTotalNs int64 `json:"gc_pause_total_ns"`
	GCPauseMaxNs   int64 `json:"gc_pause_max_ns"`
	// Mappings are the shared-memory mappings of the endpoint and the
	// pages they got.
	Mappings []MappingPages `json:"mappings,omitempty"`
	Method   string         `json:"method"`
}

// MappingPages is the effective page size of one shared-memory mapping.
type MappingPages struct {
	Path             string `json:"path"`
	SizeKB           int64  `json:"size_kb"`
	KernelPageSizeKB int64  `json:"kernel_page_size_kb"`
	MMUPageSizeKB    int64  `json:"mmu_page_size_kb"`
	THPKB            int64  `json:"thp_kb,omitempty"`
	// Words says it plainly, e.g. "2 MiB hugetlb pages" or "4 KiB pages
	// (no huge pages: pool empty)".
	Words string `json:"words"`
	// HugeRequested is NodeOptions.HugePages; when true and the mapping
	// is not huge, the report says so.
	HugeRequested bool `json:"huge_requested,omitempty"`
}

// StageSplit divides the shared-memory path of a case into stages.
type StageSplit struct {
	Count int64 `json:"count"` // messages stamped
	// Copy: publish-side copy into the slot; Wake: commit → the
	// subscriber's wake-up; Callback: wake-up → callback entry.
	Copy     Summary `json:"copy"`
	Wake     Summary `json:"wake"`
	Callback Summary `json:"callback"`
	Method   string  `json:"method"`
}

// HostTuning is the real-time tuning of a host, for the environment section.
type HostTuning struct {
	Isolcpus string `json:"isolcpus,omitempty"`  // /sys/devices/system/cpu/isolated, e.g. "2-3"
	NohzFull string `json:"nohz_full,omitempty"` // /sys/devices/system/cpu/nohz_full
	// NICIRQs lists each network interface's IRQs and their CPU affinity.
	NICIRQs []NICIRQ `json:"nic_irqs,omitempty"`
	Method  string   `json:"method,omitempty"`
}

// NICIRQ is one IRQ of a network interface.
type NICIRQ struct {
	NIC      string `json:"nic"`
	IRQ      int    `json:"irq"`
	Name     string `json:"name,omitempty"`     // /proc/interrupts action name
	Affinity string `json:"affinity,omitempty"` // smp_affinity_list, e.g. "0-1"
}
