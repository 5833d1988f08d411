package tracing

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hilrig/hilrig/tracing/internal/tracefs"
)

// Buffer bounds, per CPU.
const (
	DefaultBufferKB = 1024
	MaxBufferKB     = 16 * 1024
)

// Config arms a Session.
type Config struct {
	// CPUs are the measured CPUs (the endpoints' and the receiver's); only
	// they are traced. Empty: every CPU. Marker writes from a thread on a
	// CPU outside the set are not recorded.
	CPUs []int
	// BufferKB is the ring buffer per traced CPU (KiB; 0: DefaultBufferKB,
	// at most MaxBufferKB). Older events are overwritten, so the trace
	// covers roughly the last BufferKB / (event rate × ~40 B) seconds.
	BufferKB int
}

var instances atomic.Int64

// instancePrefix starts every instance's name: hilrig-<pid>-<n>. Arm
// removes the instances of processes that are gone (killed before Close)
// before it makes its own.
const instancePrefix = "hilrig-"

// Session is an armed trace on one host. Mark and MarkSeq are safe for
// concurrent use; Snapshot and Close serialise.
type Session struct {
	in  *tracefs.Instance
	cfg Config
	mu  sync.Mutex
}

// Arm creates a private tracefs instance (mounting tracefs if needed) and
// starts recording. Needs root (CAP_SYS_ADMIN); off Linux it returns an
// error matching errors.ErrUnsupported.
func Arm(cfg Config) (*Session, error) {
	if cfg.BufferKB == 0 {
		cfg.BufferKB = DefaultBufferKB
	}
	if cfg.BufferKB < 0 || cfg.BufferKB > MaxBufferKB {
		return nil, fmt.Errorf("tracing: buffer %d KiB per CPU outside 1..%d", cfg.BufferKB, MaxBufferKB)
	}
	cfg.CPUs = slices.Clone(cfg.CPUs)
	name := instancePrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(instances.Add(1), 10)
	in, err := tracefs.Open(tracefs.Options{Name: name, CPUs: cfg.CPUs, BufferKB: cfg.BufferKB, ReapPrefix: instancePrefix})
	if err != nil {
		return nil, fmt.Errorf("arm trace: %w", err)
	}
	return &Session{in: in, cfg: cfg}, nil
}

// Reaped names the instances of dead processes Arm removed first.
func (s *Session) Reaped() []string { return s.in.Reaped }

// BufferKB is the armed per-CPU buffer size in KiB.
func (s *Session) BufferKB() int { return s.cfg.BufferKB }

// Mark writes msg into the trace (one write syscall, 0 allocs).
func (s *Session) Mark(msg []byte) error { return s.in.Mark(msg) }

// MarkerFile is the path of the session's trace_marker: a program the rig
// starts (a device under test, HILRIG_TRACE_MARKER) writes its own marker
// lines into this trace through it. Empty off Linux.
func (s *Session) MarkerFile() string { return s.in.MarkerFile() }

// AppendMarker appends the marker line the endpoints write:
// "hlr <what> seq=<seq>".
func AppendMarker(dst []byte, what string, seq uint64) []byte {
	dst = append(dst, "hlr "...)
	dst = append(dst, what...)
	dst = append(dst, " seq="...)
	return strconv.AppendUint(dst, seq, 10)
}

// MarkSeq writes "hlr <what> seq=<seq>" (what: "send" or "recv"); 0 allocs
// for what up to 16 bytes.
func (s *Session) MarkSeq(what string, seq uint64) error {
	var buf [48]byte
	return s.in.Mark(AppendMarker(buf[:0], what, seq))
}

// Snapshot is the part of a trace that covers one window.
type Snapshot struct {
	FromNs   int64   `json:"from_ns"`
	ToNs     int64   `json:"to_ns"`
	CPUs     []int   `json:"cpus,omitempty"`
	BufferKB int     `json:"buffer_kb"`
	Events   []Event `json:"events"`
}

// readLimit bounds one read of the text trace: text is ~3× the binary
// buffer, and a buffer holds at most MaxBufferKB per CPU.
func (s *Session) readLimit() int64 {
	n := int64(len(s.cfg.CPUs))
	if n == 0 {
		n = 64
	}
	return n * int64(s.cfg.BufferKB) * 1024 * 4
}

// Snapshot keeps the events in [fromNs−marginNs, toNs+marginNs]
// (CLOCK_MONOTONIC; the trace has µs resolution, so events up to
// textRound outside are kept too). Recording pauses while the buffer is
// read (events in that pause are lost, nothing already recorded is).
func (s *Session) Snapshot(fromNs, toNs, marginNs int64) (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.in.SetOn(false); err != nil {
		return nil, err
	}
	text, rerr := s.in.Read(s.readLimit())
	if err := s.in.SetOn(true); err != nil && rerr == nil {
		rerr = err
	}
	if rerr != nil {
		return nil, rerr
	}
	evs, err := Parse(text)
	if err != nil {
		return nil, err
	}
	lo, hi := fromNs-marginNs, toNs+marginNs
	evs = keepWindow(evs, lo, hi)
	return &Snapshot{FromNs: lo, ToNs: hi, CPUs: s.cfg.CPUs, BufferKB: s.cfg.BufferKB, Events: evs}, nil
}

// keepWindow returns the events of evs in [lo, hi] widened by textRound,
// and each CPU's last switch before it (who held the CPU when the window
// opened).
func keepWindow(evs []Event, lo, hi int64) []Event {
	lo, hi = lo-textRound, hi+textRound
	lastSwitch := map[int]int{}
	for i, e := range evs {
		if e.Kind == Switch && e.Ns < lo {
			lastSwitch[e.CPU] = i
		}
	}
	kept := evs[:0:0]
	for i, e := range evs {
		if (e.Ns >= lo && e.Ns <= hi) || (e.Kind == Switch && lastSwitch[e.CPU] == i && e.Ns < lo) {
			kept = append(kept, e)
		}
	}
	return kept
}

// textRound is the most a timestamp in the trace text differs from the
// event's (ns): the kernel prints µs, rounded to the nearest (ns2usecs).
const textRound = 500

// Close stops the trace and frees its buffer.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.in.Close()
}
