//go:build linux

// Package cdev drives real GPIO lines through the Linux GPIO character
// device, uAPI v2 only (Linux ≥ 5.10), using go-gpiocdev's thin uapi layer.
// It is the only package of the rig that imports go-gpiocdev.
//
// Outputs cost one GPIO_V2_LINE_SET_VALUES_IOCTL per edge and allocate
// nothing. Watches read the kernel's edge events (48-byte
// gpio_v2_line_event records) in batches through the runtime poller, with
// the kernel's timestamps (CLOCK_MONOTONIC, CLOCK_REALTIME or HTE) and
// sequence numbers, from which lost events are detected.
package cdev

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/warthog618/go-gpiocdev/uapi"

	"github.com/hilrig/hilrig/gpio/internal/core"
	"github.com/hilrig/hilrig/gpio/internal/sys"
)

// lineFlagEventClockHTE is GPIO_V2_LINE_FLAG_EVENT_CLOCK_HTE (Linux 5.19),
// which go-gpiocdev v0.9.1 does not define.
const lineFlagEventClockHTE uapi.LineFlagV2 = 1 << 12

var chipName = regexp.MustCompile(`^gpiochip[0-9]+$`)

// chip is an open GPIO character device.
type chip struct {
	f     *os.File
	ref   string // as the user named it, plus the path
	path  string
	label string
	lines int
}

func groupOf(path string) string {
	gid, err := sys.FileGid(path)
	if err != nil {
		return ""
	}
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil {
		return strconv.Itoa(gid)
	}
	return g.Name
}

// Paths returns the GPIO character devices present, in numeric order.
func Paths() []string {
	m, _ := filepath.Glob("/dev/gpiochip*")
	// Natural order: gpiochip2 before gpiochip10.
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && (len(m[j]) < len(m[j-1]) || len(m[j]) == len(m[j-1]) && m[j] < m[j-1]); j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
	return m
}

// openChip opens the chip named by ref: a path, a gpiochipN name or a
// chip label.
func openChip(op, ref string, req *core.Request) (*chip, error) {
	line := ""
	if req != nil {
		line = req.LineRef()
	}
	path := ref
	switch {
	case strings.HasPrefix(ref, "/"):
	case chipName.MatchString(ref):
		path = "/dev/" + ref
	default:
		// A label: find the chip that carries it.
		path = ""
		for _, p := range Paths() {
			c, err := openPath(op, ref, p, line)
			if err != nil {
				continue
			}
			if c.label == ref {
				return c, nil
			}
			c.f.Close()
		}
		avail := Paths()
		detail := "no chip has this label"
		if len(avail) == 0 {
			detail += " and no /dev/gpiochip* exists (is the GPIO driver loaded?)"
		}
		return nil, &core.LineError{Op: op, Chip: ref, Line: line, Kind: core.ErrChipMissing, Detail: detail}
	}
	return openPath(op, ref, path, line)
}

func openPath(op, ref, path, line string) (*chip, error) {
	name := ref
	if name != path {
		name = ref + " (" + path + ")"
	}
	f, err := os.Open(path)
	if err != nil {
		le := &core.LineError{Op: op, Chip: name, Line: line, Kind: core.ErrChipMissing, Err: err}
		switch {
		case errors.Is(err, fs.ErrPermission):
			le.Kind = core.ErrPermission
			le.Group = groupOf(path)
		case errors.Is(err, fs.ErrNotExist):
			le.Err = nil
			if avail := Paths(); len(avail) == 0 {
				le.Detail = "no /dev/gpiochip* exists (is the GPIO driver loaded?)"
			} else {
				le.Detail = "present: " + strings.Join(avail, ", ")
			}
		}
		return nil, le
	}
	ci, err := uapi.GetChipInfo(f.Fd())
	if err != nil {
		f.Close()
		return nil, &core.LineError{Op: op, Chip: name, Line: line, Kind: core.ErrChipMissing, Detail: "not a GPIO character device", Err: err}
	}
	c := &chip{f: f, ref: name, path: path, label: uapi.BytesToString(ci.Label[:]), lines: int(ci.Lines)}
	if ci.Lines > 0 {
		// uAPI v2 probe: GPIO_V2_GET_LINEINFO_IOCTL exists since 5.10.
		if _, err := uapi.GetLineInfoV2(f.Fd(), 0); err != nil {
			f.Close()
			return nil, &core.LineError{Op: op, Chip: name, Line: line, Kind: core.ErrKernelTooOld,
				Detail: "GPIO_V2_GET_LINEINFO_IOCTL failed", Err: err}
		}
	}
	return c, nil
}

func (c *chip) resolve(op string, req *core.Request) (int, error) {
	if req.Offset >= 0 {
		if req.Offset >= c.lines {
			return -1, &core.LineError{Op: op, Chip: c.ref, Line: req.LineRef(), Kind: core.ErrOffsetRange,
				Detail: fmt.Sprintf("chip has %d lines (0..%d)", c.lines, c.lines-1)}
		}
		return req.Offset, nil
	}
	for i := range c.lines {
		li, err := uapi.GetLineInfoV2(c.f.Fd(), i)
		if err == nil && uapi.BytesToString(li.Name[:]) == req.Name {
			return i, nil
		}
	}
	return -1, &core.LineError{Op: op, Chip: c.ref, Line: req.LineRef(), Kind: core.ErrLineNotFound}
}

// requestErr classifies a failed GPIO_V2_GET_LINE_IOCTL.
func (c *chip) requestErr(op string, req *core.Request, offset int, err error) error {
	le := &core.LineError{Op: op, Chip: c.ref, Line: req.LineRef(), Kind: core.ErrNotSupported, Err: err}
	switch {
	case errors.Is(err, sys.EBUSY):
		le.Kind = core.ErrBusy
		if li, ierr := uapi.GetLineInfoV2(c.f.Fd(), offset); ierr == nil {
			le.Consumer = uapi.BytesToString(li.Consumer[:])
		}
	case errors.Is(err, sys.EACCES), errors.Is(err, sys.EPERM):
		le.Kind = core.ErrPermission
		le.Group = groupOf(c.path)
	case errors.Is(err, sys.ENOTTY):
		le.Kind = core.ErrKernelTooOld
	case errors.Is(err, sys.EINVAL), errors.Is(err, sys.EOPNOTSUPP):
		le.Detail = "the kernel rejected the line configuration (event clock, drive or bias not offered by this chip or kernel)"
	}
	return le
}

// getLine requests the lines; nonblock selects a descriptor served by the
// runtime poller (for reads with deadlines).
func (c *chip) getLine(op string, req *core.Request, offsets []int, cfg uapi.LineConfig, bufSize int, nonblock bool) (*os.File, error) {
	lr := uapi.LineRequest{Lines: uint32(len(offsets)), Config: cfg, EventBufferSize: uint32(bufSize)}
	copy(lr.Consumer[:len(lr.Consumer)-1], req.Consumer)
	for i, o := range offsets {
		lr.Offsets[i] = uint32(o)
	}
	if err := uapi.GetLine(c.f.Fd(), &lr); err != nil {
		return nil, c.requestErr(op, req, offsets[0], err)
	}
	if nonblock {
		if err := sys.SetNonblock(int(lr.Fd)); err != nil {
			sys.Close(int(lr.Fd))
			return nil, fmt.Errorf("gpio: %s %s: %w", op, c.ref, err)
		}
	}
	return os.NewFile(uintptr(lr.Fd), fmt.Sprintf("%s:%v", c.path, offsets)), nil
}

// Output is a requested output line.
type Output struct {
	f      *os.File
	fd     uintptr
	errSet error // wrapped once so a failing Set allocates nothing new
	closed bool
	offset int
}

// RequestOutput requests one line as output driven to the logical level
// initial.
func RequestOutput(req core.Request, initial bool) (*Output, error) {
	const op = "request output"
	c, err := openChip(op, req.Chip, &req)
	if err != nil {
		return nil, err
	}
	defer c.f.Close()
	off, err := c.resolve(op, &req)
	if err != nil {
		return nil, err
	}
	flags := uapi.LineFlagV2Output
	if req.ActiveLow {
		flags |= uapi.LineFlagV2ActiveLow
	}
	switch req.Drive {
	case core.DriveOpenDrain:
		flags |= uapi.LineFlagV2OpenDrain
	case core.DriveOpenSource:
		flags |= uapi.LineFlagV2OpenSource
	}
	cfg := uapi.LineConfig{Flags: flags}
	var v uapi.OutputValues
	if initial {
		v = 1
	}
	cfg.AddAttribute(uapi.LineConfigAttribute{Attr: v.Encode(), Mask: 1})
	f, err := c.getLine(op, &req, []int{off}, cfg, 0, false)
	if err != nil {
		return nil, err
	}
	return &Output{f: f, fd: f.Fd(), offset: off,
		errSet: fmt.Errorf("gpio: set %s line %d", c.ref, off)}, nil
}

// Offset returns the line's offset.
func (o *Output) Offset() int { return o.offset }

// Set drives the logical level: one GPIO_V2_LINE_SET_VALUES_IOCTL, no
// allocation. Not safe for concurrent use; must not race with Close.
func (o *Output) Set(active bool) error {
	if o.closed {
		return core.ErrClosed
	}
	lv := uapi.LineValues{Mask: 1}
	if active {
		lv.Bits = 1
	}
	if err := uapi.SetLineValuesV2(o.fd, lv); err != nil {
		return fmt.Errorf("%w: %w", o.errSet, err)
	}
	return nil
}

// Close releases the line.
func (o *Output) Close() error {
	if o.closed {
		return core.ErrClosed
	}
	o.closed = true
	return o.f.Close()
}

// eventSize is sizeof(struct gpio_v2_line_event).
const eventSize = 48

// eventFile is what a Watcher reads events from: the line request's
// descriptor (*os.File) in production; tests put a pipe, or a wrapper that
// lands a Close at a chosen point, behind it.
type eventFile interface {
	Read(p []byte) (int, error)
	SetReadDeadline(t time.Time) error
	Close() error
}

// Watcher reads edge events of requested input lines.
type Watcher struct {
	f       eventFile
	ref     string
	clock   core.Clock
	offsets []int
	lastSeq []uint32 // per line (index into offsets): last line seqno read
	buf     [64 * eventSize]byte
	r, w    int // unread events are buf[r:w]
	dropped atomic.Uint64
	closed  atomic.Bool // Close may run on another goroutine than reads
}

// Watch requests the lines as inputs with edge detection on both edges.
func Watch(reqs []core.Request) (*Watcher, error) {
	const op = "watch"
	if len(reqs) == 0 || len(reqs) > uapi.LinesMax {
		return nil, fmt.Errorf("gpio: watch: %d lines, want 1..%d: %w", len(reqs), uapi.LinesMax, core.ErrInvalidSpec)
	}
	first := &reqs[0]
	c, err := openChip(op, first.Chip, first)
	if err != nil {
		return nil, err
	}
	defer c.f.Close()
	offsets := make([]int, len(reqs))
	for i := range reqs {
		if offsets[i], err = c.resolve(op, &reqs[i]); err != nil {
			return nil, err
		}
	}
	flags := uapi.LineFlagV2Input | uapi.LineFlagV2EdgeBoth
	switch first.Clock {
	case core.ClockRealtime:
		flags |= uapi.LineFlagV2EventClockRealtime
	case core.ClockHTE:
		flags |= lineFlagEventClockHTE
	}
	cfg := uapi.LineConfig{Flags: flags}
	// Active-low per line: an attribute with the lines' mask.
	var alMask uapi.LineBitmap
	for i := range reqs {
		if reqs[i].ActiveLow {
			alMask |= 1 << uint(i)
		}
	}
	if alMask != 0 {
		cfg.AddAttribute(uapi.LineConfigAttribute{Attr: (flags | uapi.LineFlagV2ActiveLow).Encode(), Mask: alMask})
	}
	f, err := c.getLine(op, first, offsets, cfg, first.EventBufferSize, true)
	if err != nil {
		return nil, err
	}
	return &Watcher{f: f, ref: c.ref, clock: first.Clock, offsets: offsets, lastSeq: make([]uint32, len(offsets))}, nil
}

// Offsets returns the watched offsets in request order.
func (w *Watcher) Offsets() []int { return append([]int(nil), w.offsets...) }

// Dropped returns the number of events lost so far.
func (w *Watcher) Dropped() uint64 { return w.dropped.Load() }

const maxWait = 20 * time.Millisecond

// ReadEdges blocks until at least one event is read, ctx is done or the
// watcher is closed, and copies up to len(dst) events into dst in the
// kernel's order. Lost events (line sequence gaps) are reported as
// *core.OverflowError alongside valid edges. No allocation except on
// overflow.
func (w *Watcher) ReadEdges(ctx context.Context, dst []core.Edge) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	for w.r == w.w {
		if w.closed.Load() {
			return 0, core.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		dl := time.Now().Add(maxWait)
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl = d
		}
		if err := w.f.SetReadDeadline(dl); err != nil {
			if w.closed.Load() {
				// Close ran after the check above. The os package reports
				// it with internal/poll's ErrFileClosing here, which is not
				// os.ErrClosed; Close sets the flag before it closes.
				return 0, core.ErrClosed
			}
			return 0, fmt.Errorf("gpio: watch %s: %w", w.ref, err)
		}
		n, err := w.f.Read(w.buf[:])
		if n >= eventSize {
			// The kernel returns whole events; a torn tail cannot happen.
			w.r, w.w = 0, n-n%eventSize
			break
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			if errors.Is(err, os.ErrClosed) || w.closed.Load() {
				return 0, core.ErrClosed
			}
			return 0, fmt.Errorf("gpio: watch %s: read events: %w", w.ref, err)
		}
	}
	var dropped uint64
	dropLine := -1
	n := 0
	for n < len(dst) && w.r < w.w {
		b := w.buf[w.r : w.r+eventSize]
		w.r += eventSize
		ts := binary.NativeEndian.Uint64(b[0:])
		id := binary.NativeEndian.Uint32(b[8:])
		off := int(binary.NativeEndian.Uint32(b[12:]))
		seq := binary.NativeEndian.Uint32(b[16:])
		lseq := binary.NativeEndian.Uint32(b[20:])
		for i, o := range w.offsets {
			if o == off {
				if gap := lseq - w.lastSeq[i]; gap > 1 {
					dropped += uint64(gap - 1)
					if dropLine < 0 {
						dropLine = off
					}
				}
				w.lastSeq[i] = lseq
				break
			}
		}
		dst[n] = core.Edge{Line: off, Rising: id == uint32(uapi.LineEventRisingEdge), Clock: w.clock,
			TimestampNs: int64(ts), Seqno: uint64(seq), LineSeqno: uint64(lseq)}
		n++
	}
	if dropped > 0 {
		w.dropped.Add(dropped)
		return n, &core.OverflowError{Chip: w.ref, Line: dropLine, Dropped: dropped}
	}
	return n, nil
}

// Close releases the lines; a pending ReadEdges returns ErrClosed.
func (w *Watcher) Close() error {
	if w.closed.Swap(true) {
		return core.ErrClosed
	}
	return w.f.Close()
}

// Chips lists the GPIO character devices with their lines. Chips that
// cannot be opened are listed with the error in Label.
func Chips() []core.ChipInfo {
	var out []core.ChipInfo
	for _, p := range Paths() {
		c, err := openPath("list", filepath.Base(p), p, "")
		if err != nil {
			out = append(out, core.ChipInfo{Name: filepath.Base(p), Path: p, Label: err.Error()})
			continue
		}
		ci := core.ChipInfo{Name: filepath.Base(p), Path: p, Label: c.label}
		for i := range c.lines {
			li, err := uapi.GetLineInfoV2(c.f.Fd(), i)
			if err != nil {
				continue
			}
			info := core.LineInfo{Offset: i, Name: uapi.BytesToString(li.Name[:]),
				Consumer: uapi.BytesToString(li.Consumer[:]), Used: li.Flags.IsUsed(),
				Output: li.Flags.IsOutput(), ActiveLow: li.Flags.IsActiveLow()}
			if li.Flags.IsOpenDrain() {
				info.Drive = core.DriveOpenDrain
			} else if li.Flags.IsOpenSource() {
				info.Drive = core.DriveOpenSource
			}
			ci.Lines = append(ci.Lines, info)
		}
		c.f.Close()
		out = append(out, ci)
	}
	return out
}
