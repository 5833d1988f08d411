package soak

import (
	"time"

	"github.com/hilrig/hilrig/report"
)

// SchemaVersion of the checkpoint file this build writes and the newest it reads.
const SchemaVersion = 1

// Header is the first line of a checkpoint: what the soak is.
type Header struct {
	SchemaVersion int       `json:"schema_version"`
	Name          string    `json:"name"`
	Started       time.Time `json:"started"`
	// Window is the nominal window length (default 10 s).
	Window time.Duration `json:"window_ns"`
	// Planned is the planned soak duration (72 h on a lab rack).
	Planned time.Duration   `json:"planned_ns,omitempty"`
	Rack    string          `json:"rack,omitempty"`
	Config  string          `json:"config,omitempty"` // as given
	Bounds  *Bounds         `json:"bounds,omitempty"`
	Run     *report.RunInfo `json:"run,omitempty"`
}

// Window is one closed window of a soak: every agent's summary for
// [Start, End). Index is assigned by the Checkpointer (0, 1, 2, ...; it
// continues across resumes, so a gap in time never reuses a number).
type Window struct {
	Index  int           `json:"index"`
	Start  time.Time     `json:"start"`
	End    time.Time     `json:"end"`
	Agents []AgentWindow `json:"agents"`
	// Fault marks a fault window: a board was lost in it (missed agent
	// heartbeats or a console panic) and recovered (power-cycled, agent
	// redeployed, flows resumed) before it closed. Its latency samples and
	// losses are left out of the verdicts and the window is counted.
	Fault *Fault `json:"fault,omitempty"`
}

// Fault is a board outage inside a fault window, or a device under test's
// crash that its supervisor restarted (Cause "dut <name> ended (…)",
// Console the program's output tail).
type Fault struct {
	Board string `json:"board"`
	// Cause is why the board counted as lost ("sent no agent window for
	// 30s", "console: Kernel panic - not syncing: ...").
	Cause string `json:"cause"`
	// From is when the loss was detected, To when its flows ran again.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Recovery is "power-cycled (n of budget)": how it came back.
	Recovery string `json:"recovery,omitempty"`
	// Console is the board's console tail at detection (lines as
	// captured, with monotonic and wall stamps); empty without capture.
	Console string `json:"console,omitempty"`
}

// AgentWindow is what one agent (one board) ships per window.
type AgentWindow struct {
	Agent      string         `json:"agent"`
	Streams    []StreamWindow `json:"streams,omitempty"`
	RSSBytes   int64          `json:"rss_bytes"`
	CPUPercent float64        `json:"cpu_percent"` // of one core
	PTP        *PTPSample     `json:"ptp,omitempty"`
	Events     []Event        `json:"events,omitempty"`
}

// StreamWindow is one stream's (topic's, at the subscriber) window.
// Histogram is the window's latency histogram in ns; Summary is filled from
// it when the window is appended. Read keeps only the Summary in memory.
type StreamWindow struct {
	Stream    string            `json:"stream"`
	Method    *report.Method    `json:"method,omitempty"`
	Sent      int64             `json:"sent"`
	Delivered int64             `json:"delivered"`
	Lost      int64             `json:"lost"`
	Excluded  int64             `json:"excluded,omitempty"` // samples dropped: PTP not locked
	Histogram *report.Histogram `json:"histogram,omitempty"`
	Summary   report.Summary    `json:"summary"`
}

// PTPSample is a board's clock state at the end of a window.
type PTPSample struct {
	Locked bool   `json:"locked"`
	State  string `json:"state,omitempty"` // ptp4l port state, e.g. "SLAVE", "UNCALIBRATED"
	// OffsetNs is the last offset from master; MaxAbsOffsetNs the largest
	// |offset| seen during the window.
	OffsetNs       int64 `json:"offset_ns"`
	MaxAbsOffsetNs int64 `json:"max_abs_offset_ns,omitempty"`
}

// Event kinds.
const (
	EventRestart    = "restart"     // a publisher/subscriber was restarted (churn or fault)
	EventPTPUnlock  = "ptp-unlock"  // lost lock
	EventPTPLock    = "ptp-lock"    // regained lock
	EventAgentError = "agent-error" // agent reported an error
)

// Event is something that happened during a window.
type Event struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	Target string    `json:"target,omitempty"` // e.g. "sub imu/1"
	// Recovered and RecoveryNs apply to restarts: the time from restart to
	// the first delivered message afterwards.
	Recovered  bool   `json:"recovered,omitempty"`
	RecoveryNs int64  `json:"recovery_ns,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// Resumption is written when a soak is resumed into an existing checkpoint.
type Resumption struct {
	Time time.Time `json:"time"`
	// AfterIndex is the last window index before the resume (-1 if none).
	AfterIndex int `json:"after_index"`
	// GapFrom is the end of the last closed window (or the start of the soak);
	// GapTo the resume time. Nothing was measured in between.
	GapFrom time.Time `json:"gap_from"`
	GapTo   time.Time `json:"gap_to"`
	// DroppedTailBytes is the size of a torn last line removed at resume.
	DroppedTailBytes int64 `json:"dropped_tail_bytes,omitempty"`
}

// record is one JSONL line.
type record struct {
	Kind   string      `json:"kind"` // "header", "window", "resume"
	Header *Header     `json:"header,omitempty"`
	Window *Window     `json:"window,omitempty"`
	Resume *Resumption `json:"resume,omitempty"`
}

// Locked reports whether every agent reporting PTP was locked in w (true
// when no agent reports PTP: the windows then use one clock).
func (w *Window) Locked() bool {
	for _, a := range w.Agents {
		if a.PTP != nil && !a.PTP.Locked {
			return false
		}
	}
	return true
}
