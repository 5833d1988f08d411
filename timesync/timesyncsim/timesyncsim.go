// Package timesyncsim is a fake [timesync.Source] for the sim rack on
// machines without linuxptp: a board whose "PTP" status is scripted, with
// the Sync ingress time taken from the system clock. By default it is
// always locked (SLAVE, a fixed grandmaster, offset 0, path delay 2 µs,
// ingress advancing on every read, a new offset measured at every read).
// Tests change its State to script loss of lock, a frozen ingress time, an
// offset ptp4l keeps without measuring, a grandmaster change or read
// errors.
//
// Like a real clock, each measurement differs from the previous one: a
// read that "receives a Sync" reports State.Offset and the next one
// State.Offset moved 1 ns towards zero (+1 ns for 0), alternately, so a
// [timesync.Tracker] sees fresh measurements. The first read after Set or
// Update reports State.Offset exactly.
// It passes the same conformance test (timesync/timesynctest) as the real
// ptp4l reader.
package timesyncsim

import (
	"context"
	"sync"
	"time"

	"github.com/hilrig/hilrig/timesync"
)

// DefaultGM is the grandmaster identity a new Source follows.
const DefaultGM timesync.ClockIdentity = 0x02000afffee90001

// State is what the fake ptp4l reports.
type State struct {
	PortState timesync.PortState
	GM        timesync.ClockIdentity
	GMPresent bool
	// GMQuality is the grandmaster's clockQuality (Locked: class 248, a
	// free-running ptp4l grandmaster as on the sim rack).
	GMQuality     timesync.ClockQuality
	Offset        time.Duration
	MeanPathDelay time.Duration
	StepsRemoved  uint16
	// FreezeIngress stops the Sync ingress time (Syncs stopped arriving),
	// as ptp4l does for seconds after its GM dies.
	FreezeIngress bool
	// HoldOffset keeps reporting the last offset while Syncs still
	// arrive: ptp4l after a GM restart, before a Delay_Resp lets it
	// measure again.
	HoldOffset bool
	// ClearCurrent reports CURRENT_DATA_SET's offset as 0 (ptp4l reset
	// its data sets after a link loss and has not measured since).
	ClearCurrent bool
	// Err, if set, is returned by Status (a read failure).
	Err error
}

// Locked is the default, healthy state.
func Locked() State {
	return State{PortState: timesync.PortStateSlave, GM: DefaultGM, GMPresent: true,
		GMQuality:     timesync.ClockQuality{Class: 248, Accuracy: 0xfe, Variance: 0xffff},
		MeanPathDelay: 2 * time.Microsecond, StepsRemoved: 1}
}

// Options tunes New. nil means defaults.
type Options struct {
	// Identity is the board's own clock identity (0 → 02000a.fffe.e90002).
	Identity timesync.ClockIdentity
	// Initial state (zero value → Locked()).
	Initial *State
	// Jitter, if set, is added to Offset on each read (e.g. to simulate
	// software-timestamping noise); called under the Source's lock.
	Jitter func() time.Duration
}

// Source is a scripted PTP status. Safe for concurrent use; Status never
// blocks (beyond honouring a cancelled ctx).
type Source struct {
	mu      sync.Mutex
	id      timesync.ClockIdentity
	st      State
	jitter  func() time.Duration
	ingress int64
	reads   uint64
	// off is the offset last reported; dither says whether the next
	// measurement is State.Offset (false) or its 1 ns neighbour.
	off     time.Duration
	offFrom time.Duration // State.Offset that off was measured from
	haveOff bool
	dither  bool
	closed  bool
}

var _ timesync.Source = (*Source)(nil)

// New returns a Source in opts.Initial (default: locked).
func New(opts *Options) *Source {
	if opts == nil {
		opts = &Options{}
	}
	s := &Source{id: opts.Identity, st: Locked(), jitter: opts.Jitter}
	if s.id == 0 {
		s.id = 0x02000afffee90002
	}
	if opts.Initial != nil {
		s.st = *opts.Initial
	}
	return s
}

// Set replaces the state; the next Status reports it.
func (s *Source) Set(st State) {
	s.mu.Lock()
	s.st = st
	s.dither = false
	s.mu.Unlock()
}

// Update changes the state in place under the lock.
func (s *Source) Update(f func(*State)) {
	s.mu.Lock()
	f(&s.st)
	s.dither = false
	s.mu.Unlock()
}

// Reads counts Status calls (tests use it to wait for a poll).
func (s *Source) Reads() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// Status reports the current state. The Sync ingress time is the system
// clock (CLOCK_REALTIME) at the read, strictly increasing, unless
// FreezeIngress is set.
func (s *Source) Status(ctx context.Context) (timesync.Status, error) {
	now := time.Now()
	if err := ctx.Err(); err != nil {
		return timesync.Status{ReadAt: now}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.closed {
		return timesync.Status{ReadAt: now}, timesync.ErrClosed
	}
	if s.st.Err != nil {
		return timesync.Status{ReadAt: now}, s.st.Err
	}
	newSync := !s.st.FreezeIngress && (s.st.PortState == timesync.PortStateSlave || s.st.PortState == timesync.PortStateUncalibrated)
	if newSync {
		n := now.UnixNano()
		if n <= s.ingress {
			n = s.ingress + 1
		}
		s.ingress = n
	}
	// A new Sync is a new measurement (unless HoldOffset); without one
	// the offset stays, as in ptp4l. A scripted change shows at once.
	if !s.haveOff || (newSync && !s.st.HoldOffset) || s.st.Offset != s.offFrom {
		off := s.st.Offset
		if s.dither {
			off = Neighbour(off)
		}
		s.dither = !s.dither
		if s.jitter != nil {
			off += s.jitter()
		}
		s.off, s.offFrom, s.haveOff = off, s.st.Offset, true
	}
	off := s.off
	cur := off
	if s.st.ClearCurrent {
		cur = 0
	}
	return timesync.Status{
		ReadAt:          now,
		ClockIdentity:   s.id,
		Interface:       "sim0",
		PortState:       s.st.PortState,
		Offset:          off,
		CurrentOffset:   cur,
		MeanPathDelay:   s.st.MeanPathDelay,
		StepsRemoved:    s.st.StepsRemoved,
		GMIdentity:      s.st.GM,
		GMPresent:       s.st.GMPresent,
		GMQuality:       s.st.GMQuality,
		ParentPort:      s.st.GM.String() + "-1",
		LastSyncIngress: timesync.Stamp{Ns: s.ingress, Clock: timesync.Realtime},
		PHCNote:         "simulated board: no PHC",
	}, nil
}

// Neighbour is the other value a fake's measurement alternates with
// (here and in the fake ptp4l socket, timesync/internal/pmcsim): 1 ns
// towards zero (+1 ns for 0), so scripted |offset| bounds still hold.
func Neighbour(d time.Duration) time.Duration {
	switch {
	case d > 0:
		return d - 1
	case d < 0:
		return d + 1
	}
	return 1
}

// Close makes later reads fail with timesync.ErrClosed. Idempotent;
// ErrClosed the second time.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return timesync.ErrClosed
	}
	s.closed = true
	return nil
}
