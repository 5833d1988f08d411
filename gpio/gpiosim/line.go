package gpiosim

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hilrig/hilrig/gpio/internal/core"
	"github.com/hilrig/hilrig/gpio/internal/sys"
)

// requestFaults returns the error a fault switch imposes on a request.
func (c *Chip) requestFaults(op string, req *core.Request) error {
	f := c.Faults()
	switch {
	case f&FaultMissing != 0:
		return &core.LineError{Op: op, Chip: c.ref(), Line: req.LineRef(), Kind: core.ErrChipMissing, Detail: "fault switch: chip unplugged"}
	case f&FaultPermission != 0:
		return &core.LineError{Op: op, Chip: c.ref(), Line: req.LineRef(), Kind: core.ErrPermission, Group: c.group(), Err: sys.EACCES}
	case f&FaultKernelTooOld != 0:
		return &core.LineError{Op: op, Chip: c.ref(), Line: req.LineRef(), Kind: core.ErrKernelTooOld,
			Detail: "fault switch: chip offers uAPI v1 only (GPIO_V2_GET_LINE_IOCTL fails with ENOTTY)", Err: sys.ENOTTY}
	}
	return nil
}

func (c *Chip) resolve(op string, req *core.Request) (int, error) {
	if req.Offset < 0 {
		off, err := c.FindLine(req.Name)
		if err != nil {
			le := err.(*core.LineError)
			le.Op = op
			return -1, le
		}
		return off, nil
	}
	if err := c.checkOffset(op, req.Offset); err != nil {
		err.(*core.LineError).Op = op
		return -1, err
	}
	return req.Offset, nil
}

// Output is a line of the simulated chip held as an output. Set is safe to
// call from one goroutine at a time; Close must not race with Set.
type Output struct {
	c         *Chip
	off       uintptr
	line      int
	activeLow bool
	closed    bool
}

// RequestOutput claims a line as output and drives it to the logical level
// initial. The claim is visible to every process (busy detection, `gpio
// ls`). Errors are *gpio.LineError: ErrOffsetRange, ErrLineNotFound,
// ErrBusy (naming the consumer that holds the line) and the fault switches.
func (c *Chip) RequestOutput(req core.Request, initial bool) (*Output, error) {
	const op = "request output"
	if err := c.requestFaults(op, &req); err != nil {
		return nil, err
	}
	line, err := c.resolve(op, &req)
	if err != nil {
		return nil, err
	}
	off := c.lineOff(line)
	busy := func() error {
		return &core.LineError{Op: op, Chip: c.ref(), Line: req.LineRef(), Kind: core.ErrBusy,
			Consumer: getString(c.mem[off+lConsumer : off+lConsumer+nameLen]), Err: sys.EBUSY}
	}
	if c.u32(off+lFlags).Load()&flagBusyFault != 0 {
		return nil, busy()
	}
	me := c.pid
	owner := c.u32(off + lOwner)
	for !owner.CompareAndSwap(0, me) {
		h := owner.Load()
		if h == 0 {
			continue
		}
		if h == me || sys.ProcessAlive(int(h)) {
			return nil, busy()
		}
		// Stale claim of a dead process: take it over.
		if owner.CompareAndSwap(h, me) {
			break
		}
	}
	putString(c.mem[off+lConsumer:off+lConsumer+nameLen], req.Consumer)
	flags := uint32(flagOutput) | uint32(req.Drive&3)<<flagDriveShift
	if req.ActiveLow {
		flags |= flagActiveLow
	}
	c.u32(off + lFlags).Store(flags)
	c.acquire()
	o := &Output{c: c, off: off, line: line, activeLow: req.ActiveLow}
	c.publish(off, line, initial != req.ActiveLow)
	return o, nil
}

// Offset returns the line's offset.
func (o *Output) Offset() int { return o.line }

// Set drives the logical level (true = active). An edge is published to
// watchers in every process when the level changes. It does not block (a
// spin lock guards the few stores against a concurrent Pull), allocates
// nothing, and makes a system call only when a watcher sleeps.
func (o *Output) Set(active bool) error {
	if o.closed {
		return errOutputClosed
	}
	o.c.publish(o.off, o.line, active != o.activeLow)
	return nil
}

var errOutputClosed = fmt.Errorf("gpiosim: set output: %w", core.ErrClosed)

// Close releases the line (the level stays where it was). A second Close
// returns ErrClosed.
func (o *Output) Close() error {
	if o.closed {
		return core.ErrClosed
	}
	o.closed = true
	c := o.c
	c.u32(o.off + lFlags).And(^uint32(flagOutput | flagActiveLow | 3<<flagDriveShift))
	c.u32(o.off+lOwner).CompareAndSwap(c.pid, 0)
	return c.release()
}

// WatchOptions tune a watch; nil means defaults.
type WatchOptions struct {
	// Clock of the returned timestamps: ClockMonotonic (native) or
	// ClockRealtime (monotonic plus the realtime−monotonic offset sampled
	// when the watch starts, so a clock step during the watch is not
	// reflected). ClockHTE is not supported.
	Clock core.Clock
	// EventBufferSize is how far (in edges per line) the reader may fall
	// behind before the oldest edges are dropped, like the kernel's event
	// buffer; 0 or more than the ring size means the ring size.
	EventBufferSize int
}

// Watcher reads the edges of lines of a simulated chip. It is a passive
// probe: it claims nothing. ReadEdges/ReadEdge must be called from one
// goroutine at a time; Close may be called from any goroutine and unblocks
// a pending read.
type Watcher struct {
	c        *Chip
	lines    []wline
	clock    core.Clock
	offsetNs int64
	limit    uint64
	seqno    uint64
	dropped  atomic.Uint64
	closed   atomic.Bool
	active   atomic.Int32
}

type wline struct {
	line      int
	off       uintptr
	next      uint64 // line seqno (since chip creation) of the next edge to read
	base      uint64 // head when the watch started
	activeLow bool
	has       bool
	pend      core.Edge
	pendDrop  uint64
}

// Watch starts watching the given lines; only edges published after Watch
// returns are read. Requests name lines by offset or name; ActiveLow
// inverts Rising; Clock and EventBufferSize of the first request apply.
func (c *Chip) Watch(reqs []core.Request, opts *WatchOptions) (*Watcher, error) {
	const op = "watch"
	if len(reqs) == 0 {
		return nil, fmt.Errorf("gpiosim: watch %s: no lines: %w", c.ref(), core.ErrInvalidSpec)
	}
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	w := &Watcher{c: c, clock: o.Clock, limit: uint64(c.ring)}
	if o.EventBufferSize > 0 && o.EventBufferSize < c.ring {
		w.limit = uint64(o.EventBufferSize)
	}
	switch o.Clock {
	case core.ClockMonotonic:
	case core.ClockRealtime:
		w.offsetNs = sys.RealtimeNs() - sys.MonotonicNs()
	default:
		return nil, &core.LineError{Op: op, Chip: c.ref(), Line: reqs[0].LineRef(), Kind: core.ErrNotSupported,
			Detail: fmt.Sprintf("event clock %s: the simulated chip timestamps with CLOCK_MONOTONIC only", o.Clock)}
	}
	seen := map[int]bool{}
	for i := range reqs {
		req := &reqs[i]
		if err := c.requestFaults(op, req); err != nil {
			return nil, err
		}
		line, err := c.resolve(op, req)
		if err != nil {
			return nil, err
		}
		if seen[line] {
			return nil, &core.LineError{Op: op, Chip: c.ref(), Line: req.LineRef(), Kind: core.ErrInvalidSpec, Detail: "line requested twice"}
		}
		seen[line] = true
		off := c.lineOff(line)
		h := c.u64(off + lHead).Load()
		w.lines = append(w.lines, wline{line: line, off: off, next: h + 1, base: h, activeLow: req.ActiveLow})
	}
	c.acquire()
	return w, nil
}

// Offsets returns the watched offsets in request order.
func (w *Watcher) Offsets() []int {
	o := make([]int, len(w.lines))
	for i := range w.lines {
		o[i] = w.lines[i].line
	}
	return o
}

// Dropped returns the number of edges lost so far because the reader fell
// behind (also reported by ReadEdges as *gpio.OverflowError).
func (w *Watcher) Dropped() uint64 { return w.dropped.Load() }

// fill loads the next published edge of l into l.pend; it reports whether
// one is pending.
func (w *Watcher) fill(l *wline) bool {
	if l.has {
		return true
	}
	c := w.c
	head := c.u64(l.off + lHead)
	for {
		h := head.Load()
		if l.next > h {
			return false
		}
		limit := w.limit
		if Fault(c.u32(hFaults).Load())&FaultTinyBuffer != 0 {
			limit = 2
		}
		if avail := h - l.next + 1; avail > limit {
			d := avail - limit
			l.pendDrop += d
			l.next += d
		}
		slot := c.slotOff(l.line, l.next)
		seq := c.u64(slot + sSeq)
		s1 := seq.Load()
		if s1 != l.next {
			// Being overwritten by a writer that lapped us: re-read head,
			// the lag check above then skips the lost edges.
			continue
		}
		ts := c.i64(slot + sTime).Load()
		rising := c.u32(slot+sRising).Load() != 0
		if seq.Load() != s1 {
			continue
		}
		l.pend = core.Edge{Line: l.line, Rising: rising != l.activeLow, Clock: w.clock,
			TimestampNs: ts + w.offsetNs, LineSeqno: l.next - l.base}
		l.next++
		l.has = true
		return true
	}
}

// collect moves up to len(dst) pending edges into dst, oldest timestamp
// first across lines. It returns the count and the first line with drops.
func (w *Watcher) collect(dst []core.Edge) (n int, dropped uint64, dropLine int) {
	dropLine = -1
	for n < len(dst) {
		best := -1
		for i := range w.lines {
			l := &w.lines[i]
			if w.fill(l) && (best < 0 || l.pend.TimestampNs < w.lines[best].pend.TimestampNs) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		l := &w.lines[best]
		if l.pendDrop > 0 {
			dropped += l.pendDrop
			if dropLine < 0 {
				dropLine = l.line
			}
			w.seqno += l.pendDrop
			w.dropped.Add(l.pendDrop)
			l.pendDrop = 0
		}
		w.seqno++
		l.pend.Seqno = w.seqno
		dst[n] = l.pend
		l.has = false
		n++
	}
	return
}

func (w *Watcher) available() bool {
	for i := range w.lines {
		if w.fill(&w.lines[i]) {
			return true
		}
	}
	return false
}

// maxSleep bounds one futex sleep so a cancelled context is noticed
// within this time even without a deadline.
const maxSleep = 20 * time.Millisecond

// ReadEdges blocks until at least one edge is available, ctx is done or the
// watcher is closed, then copies as many available edges as fit into dst
// (oldest first across lines; per line strictly in order) and returns
// their count. If edges were lost since the last read, it returns the
// edges that follow the gap together with a *gpio.OverflowError (match
// with errors.Is(err, gpio.ErrOverflow)); the edges are valid and the
// watch goes on. It allocates nothing except on overflow.
func (w *Watcher) ReadEdges(ctx context.Context, dst []core.Edge) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	w.active.Add(1)
	defer w.active.Add(-1)
	c := w.c
	for {
		if w.closed.Load() {
			return 0, errWatchClosed
		}
		n, dropped, dl := w.collect(dst)
		if n > 0 {
			if dropped > 0 {
				return n, &core.OverflowError{Chip: c.ref(), Line: dl, Dropped: dropped}
			}
			return n, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		g := c.u32(hEvGen).Load()
		c.u32(hWaiters).Add(1)
		if !w.available() && !w.closed.Load() {
			d := maxSleep
			if dl, ok := ctx.Deadline(); ok {
				if r := time.Until(dl); r < d {
					d = max(r, time.Microsecond)
				}
			}
			sys.FutexWait(c.u32p(hEvGen), g, d)
		}
		c.u32(hWaiters).Add(^uint32(0))
	}
}

// ReadEdge is ReadEdges for a single edge.
func (w *Watcher) ReadEdge(ctx context.Context, e *core.Edge) error {
	_, err := w.ReadEdges(ctx, unsafe.Slice(e, 1))
	return err
}

var errWatchClosed = fmt.Errorf("gpiosim: watch: %w", core.ErrClosed)

// Close stops the watch and unblocks a pending read (which returns
// ErrClosed). A second Close returns ErrClosed.
func (w *Watcher) Close() error {
	if w.closed.Swap(true) {
		return core.ErrClosed
	}
	for w.active.Load() != 0 {
		sys.FutexWake(w.c.u32p(hEvGen))
		time.Sleep(50 * time.Microsecond)
	}
	return w.c.release()
}
