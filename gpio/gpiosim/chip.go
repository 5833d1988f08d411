// Package gpiosim is the simulated GPIO chip of the sim rack: a chip whose
// lines live in a shared-memory file, so a marker in one process and a
// capture (watch) in another see the same edges with the same clock.
//
// # Layout
//
// A chip NAME is the file /dev/shm/hilrig-gpiosim-NAME (the directory can be
// changed with Config.Dir / the HILRIG_GPIOSIM_DIR environment variable). It
// holds a 256-byte header, one 128-byte record per line (name, consumer,
// owner PID, level, write lock, published-event count) and one edge ring
// per line (RingSize slots of 32 bytes: line sequence number, CLOCK_MONOTONIC
// timestamp, chip sequence number, direction). The marker that changes a
// line's level writes the edge into the line's ring and publishes it by
// storing the slot's sequence number last; watchers in any process read the
// rings without locks and detect overwritten (lost) slots from the sequence
// numbers. A futex word in the header lets watchers sleep until an edge is
// published; a marker makes the wake-up system call only when a watcher is
// asleep, so marking with nobody watching costs no system call at all.
//
// # Semantics compared with a kernel chip
//
//   - Requesting an output claims the line: the owner PID and consumer label
//     are recorded; a second request fails with gpio.ErrBusy naming the
//     consumer. A claim whose owner process has died is stale and is taken
//     over silently.
//   - Watching is a passive probe, like a scope probe on the wire: it does
//     not claim the line, so a watch sees the edges of an output marked by
//     another process (a kernel chip would need a second, wired input line).
//   - Pull drives a line that no process drives as output, like the
//     kernel gpio-sim's sysfs "pull" attribute.
//   - Timestamps are CLOCK_MONOTONIC taken by the marking process just
//     before the edge is published, in the same clock domain as the kernel's
//     default GPIO event clock.
//
// Fault switches (SetFault, SetLineBusy) make the error paths of a lab
// reproducible: chip missing, permission denied, kernel too old, line busy,
// tiny event buffer. Offsets out of range need no switch.
package gpiosim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/hilrig/hilrig/gpio/internal/core"
	"github.com/hilrig/hilrig/gpio/internal/sys"
	"github.com/hilrig/hilrig/internal/kind"
)

// FilePrefix starts the name of every simulated chip file.
const FilePrefix = "hilrig-gpiosim-"

// DefaultDir is where chip files live unless Config.Dir or
// HILRIG_GPIOSIM_DIR says otherwise.
const DefaultDir = "/dev/shm"

// DefaultRingSize is the number of edges each line's ring keeps.
const DefaultRingSize = 4096

// MaxLines bounds the lines per chip (the kernel uAPI limit per request is 64;
// a chip may have more, but the sim rack needs few).
const MaxLines = 512

const (
	magic      = "HLGPSIM1"
	version    = 1
	headerSize = 256
	lineSize   = 128
	slotSize   = 32
	nameLen    = 32
)

// Header field offsets.
const (
	hMagic    = 0
	hVersion  = 8
	hLines    = 12
	hRingSize = 16
	hFaults   = 20
	hEvGen    = 24 // futex word: incremented after every published edge
	hWaiters  = 28 // number of watchers asleep on hEvGen
	hChipSeq  = 32 // u64: edges published on the chip, all lines
	hCreator  = 40 // u32: PID of the creating process
	hLabel    = 48
	hGroup    = 80
)

// Line record field offsets.
const (
	lOwner    = 0  // u32 PID holding the line as output, 0 = free
	lLock     = 4  // u32 writer lock: 0 free, else the writer's PID
	lFlags    = 8  // u32 lineFlag*
	lLevel    = 12 // u32 physical level 0/1
	lHead     = 16 // u64 edges published on this line (= seqno of the newest)
	lName     = 32
	lConsumer = 64
)

const (
	flagOutput     = 1 << 0
	flagActiveLow  = 1 << 1
	flagBusyFault  = 1 << 2
	flagDriveShift = 3 // 2 bits of core.Drive
)

// Slot field offsets.
const (
	sSeq     = 0  // u64 line seqno of the edge in the slot, 0 while written
	sTime    = 8  // i64 CLOCK_MONOTONIC ns
	sChipSeq = 16 // u64
	sRising  = 24 // u32 1 = physical level went high
)

// Fault is a fault switch of the simulated chip.
type Fault uint32

const (
	// FaultMissing makes the chip look absent (like an unplugged board).
	FaultMissing Fault = 1 << iota
	// FaultPermission makes opening fail with permission denied naming the
	// chip's group (Config.Group).
	FaultPermission
	// FaultKernelTooOld makes requests fail as on a kernel with uAPI v1 only.
	FaultKernelTooOld
	// FaultTinyBuffer limits every watch's event buffer to 2 edges so a
	// reader that falls behind overflows quickly.
	FaultTinyBuffer
)

// String lists the switches that are on, e.g. "missing,tiny-buffer", or "none".
func (f Fault) String() string {
	var parts []string
	for i, n := range []string{"missing", "permission", "kernel-too-old", "tiny-buffer"} {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// Config describes a chip to create. The zero value is usable except for
// Lines.
type Config struct {
	// Lines is the number of lines (1..MaxLines).
	Lines int
	// Label is the chip label shown by `gpio ls`; default "hilrig-gpiosim".
	Label string
	// LineNames names lines by offset; shorter than Lines leaves the rest unnamed.
	LineNames []string
	// RingSize is the number of edges kept per line, a power of two;
	// default DefaultRingSize.
	RingSize int
	// Group is the group named by FaultPermission errors; default "gpio".
	Group string
	// Dir overrides the directory of the chip file.
	Dir string
}

// Chip is a mapped simulated chip. Its methods are safe for concurrent use
// by goroutines and processes.
type Chip struct {
	name   string
	path   string
	mem    []byte
	base   unsafe.Pointer
	lines  int
	ring   int
	mask   uint64
	closed atomic.Bool
	// refs counts this handle plus the Outputs and Watchers made from it;
	// the mapping is released when the last of them closes, so closing the
	// Chip first never pulls memory from under a live marker.
	refs atomic.Int32
	// pid is this process's PID, read once: getpid is a system call and
	// publish runs on the marker's hot path.
	pid uint32
}

// Dir returns the directory that holds chip files: dir if non-empty, else
// $HILRIG_GPIOSIM_DIR, else DefaultDir.
func Dir(dir string) string {
	if dir != "" {
		return dir
	}
	if d := os.Getenv("HILRIG_GPIOSIM_DIR"); d != "" {
		return d
	}
	return DefaultDir
}

// Path returns the file of chip name in dir (see Dir).
func Path(dir, name string) string { return filepath.Join(Dir(dir), FilePrefix+name) }

func validName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "/\x00 ") {
		return fmt.Errorf("gpiosim: chip name %q: want 1..64 characters without '/', space or NUL: %w", name, core.ErrInvalidSpec)
	}
	return nil
}

// Create makes a new chip file and maps it. It fails if a chip of that
// name exists and its creator is alive; a chip left by a dead creator is
// replaced. The caller removes the file with Remove when done.
func Create(name string, cfg Config) (*Chip, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if cfg.Lines < 1 || cfg.Lines > MaxLines {
		return nil, fmt.Errorf("gpiosim: create %s: Lines = %d, want 1..%d: %w", name, cfg.Lines, MaxLines, core.ErrInvalidSpec)
	}
	if cfg.RingSize == 0 {
		cfg.RingSize = DefaultRingSize
	}
	if cfg.RingSize < 2 || cfg.RingSize&(cfg.RingSize-1) != 0 || cfg.RingSize > 1<<20 {
		return nil, fmt.Errorf("gpiosim: create %s: RingSize = %d, want a power of two in 2..1048576: %w", name, cfg.RingSize, core.ErrInvalidSpec)
	}
	if len(cfg.LineNames) > cfg.Lines {
		return nil, fmt.Errorf("gpiosim: create %s: %d line names for %d lines: %w", name, len(cfg.LineNames), cfg.Lines, core.ErrInvalidSpec)
	}
	if cfg.Label == "" {
		cfg.Label = "hilrig-gpiosim"
	}
	if cfg.Group == "" {
		cfg.Group = "gpio"
	}
	path := Path(cfg.Dir, name)
	size := headerSize + cfg.Lines*lineSize + cfg.Lines*cfg.RingSize*slotSize

	// Build the file under a temporary name and link it into place, so an
	// opener never sees a half-written header and an existing chip is
	// never overwritten by accident.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+FilePrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("gpiosim: create %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := tmp.Chmod(0o666); err != nil {
		return nil, fmt.Errorf("gpiosim: create %s: %w", name, err)
	}
	if err := tmp.Truncate(int64(size)); err != nil {
		return nil, fmt.Errorf("gpiosim: create %s: size %d bytes: %w", name, size, err)
	}
	mem, err := sys.Map(tmp, size)
	if err != nil {
		return nil, fmt.Errorf("gpiosim: create %s: mmap: %w", name, err)
	}
	c := newChip(name, path, mem, cfg.Lines, cfg.RingSize)
	copy(mem[hMagic:], magic)
	c.u32(hVersion).Store(version)
	c.u32(hLines).Store(uint32(cfg.Lines))
	c.u32(hRingSize).Store(uint32(cfg.RingSize))
	c.u32(hCreator).Store(uint32(os.Getpid()))
	putString(mem[hLabel:hLabel+nameLen], cfg.Label)
	putString(mem[hGroup:hGroup+nameLen], cfg.Group)
	for i, n := range cfg.LineNames {
		off := c.lineOff(i)
		putString(mem[off+lName:off+lName+nameLen], n)
	}
	for {
		err = os.Link(tmp.Name(), path)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
		// Replace only a chip whose creator is gone.
		old, oerr := openPath(name, path)
		if oerr == nil {
			alive := old.creatorAlive()
			old.Close()
			if alive {
				break
			}
		}
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			break
		}
	}
	sys.Unmap(mem)
	return nil, fmt.Errorf("gpiosim: create %s: %s: %w", name, path, err)
}

// RemoveStale removes the chips in Dir(dir) whose label starts with
// labelPrefix and whose creator process is gone, and returns their names.
// It is for chips a run makes and removes itself (the rig's, labelled
// "hilrig-rig-<domain>"): a run killed before its cleanup leaves them
// behind, each holding its rings in tmpfs memory. Chips made to outlive
// their creator (`hilrig gpio sim create`) must not match labelPrefix. A
// creator's PID taken by another process keeps its chips (a leak, never a
// removal under a live run); files that are not chips are left alone.
// Processes that still map a removed chip keep their mapping. Safe
// concurrently with Create and with other callers.
func RemoveStale(dir, labelPrefix string) ([]string, error) {
	d := Dir(dir)
	ents, err := os.ReadDir(d)
	if err != nil {
		return nil, fmt.Errorf("gpiosim: stale chips in %s: %w", d, err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), FilePrefix)
		if !ok || !e.Type().IsRegular() || validName(name) != nil {
			continue
		}
		c, err := openPath(name, filepath.Join(d, e.Name()))
		if err != nil {
			continue // gone meanwhile, or not a chip of this layout
		}
		stale := strings.HasPrefix(c.Label(), labelPrefix) && !c.creatorAlive()
		c.Close()
		if !stale {
			continue
		}
		if err := os.Remove(c.path); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("gpiosim: remove stale chip %s: %w", c.path, err))
			}
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// creatorAlive reports whether the process that created the chip still
// runs (or its PID was taken by another process: this cannot tell).
func (c *Chip) creatorAlive() bool { return sys.ProcessAlive(int(c.u32(hCreator).Load())) }

// Open maps the existing chip name (in Dir("")).
func Open(name string) (*Chip, error) { return OpenIn("", name) }

// OpenIn maps the existing chip name in dir. Errors are *gpio.LineError
// values: ErrChipMissing, ErrPermission (naming the file's group) or
// ErrKernelTooOld (fault switch).
func OpenIn(dir, name string) (*Chip, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	c, err := openPath(name, Path(dir, name))
	if err != nil {
		return nil, err
	}
	f := Fault(c.u32(hFaults).Load())
	switch {
	case f&FaultMissing != 0:
		c.Close()
		return nil, c.chipErr("open chip", core.ErrChipMissing, "fault switch: chip unplugged", nil)
	case f&FaultPermission != 0:
		e := c.chipErr("open chip", core.ErrPermission, "", sys.EACCES)
		e.Group = c.group()
		c.Close()
		return nil, e
	}
	return c, nil
}

// OpenRaw maps the chip ignoring the fault switches, for the tools that
// operate them (`hilrig gpio sim fault`) and for harnesses.
func OpenRaw(dir, name string) (*Chip, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	return openPath(name, Path(dir, name))
}

func openPath(name, path string) (*Chip, error) {
	ref := kind.SimChip(name).String() + " (" + path + ")"
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		le := &core.LineError{Op: "open chip", Chip: ref, Kind: core.ErrChipMissing, Err: err}
		if errors.Is(err, fs.ErrPermission) {
			le.Kind = core.ErrPermission
			le.Group = groupOf(path)
		} else if errors.Is(err, fs.ErrNotExist) {
			le.Detail = "no simulated chip of that name (create it with gpiosim.Create or `hilrig gpio sim create`)"
			le.Err = nil
		}
		return nil, le
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gpiosim: open %s: %w", ref, err)
	}
	if st.Size() < headerSize {
		return nil, &core.LineError{Op: "open chip", Chip: ref, Kind: core.ErrChipMissing, Detail: fmt.Sprintf("file is %d bytes, not a simulated chip", st.Size())}
	}
	mem, err := sys.Map(f, int(st.Size()))
	if err != nil {
		return nil, fmt.Errorf("gpiosim: open %s: mmap: %w", ref, err)
	}
	if string(mem[:8]) != magic || *(*uint32)(unsafe.Pointer(&mem[hVersion])) != version {
		sys.Unmap(mem)
		return nil, &core.LineError{Op: "open chip", Chip: ref, Kind: core.ErrChipMissing, Detail: "bad magic or layout version: not a hilrig simulated chip of this version"}
	}
	lines := int(*(*uint32)(unsafe.Pointer(&mem[hLines])))
	ring := int(*(*uint32)(unsafe.Pointer(&mem[hRingSize])))
	if lines < 1 || lines > MaxLines || ring < 2 || ring&(ring-1) != 0 ||
		int64(headerSize+lines*lineSize+lines*ring*slotSize) != st.Size() {
		sys.Unmap(mem)
		return nil, &core.LineError{Op: "open chip", Chip: ref, Kind: core.ErrChipMissing, Detail: "corrupt header (line count, ring size and file size disagree)"}
	}
	return newChip(name, path, mem, lines, ring), nil
}

func newChip(name, path string, mem []byte, lines, ring int) *Chip {
	c := &Chip{name: name, path: path, mem: mem, base: unsafe.Pointer(&mem[0]),
		lines: lines, ring: ring, mask: uint64(ring - 1)}
	c.refs.Store(1)
	c.pid = uint32(os.Getpid())
	return c
}

func lookupGroup(gid int) string {
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil {
		return strconv.Itoa(gid)
	}
	return g.Name
}

func groupOf(path string) string {
	gid, err := sys.FileGid(path)
	if err != nil {
		gid, err = sys.FileGid(filepath.Dir(path))
		if err != nil {
			return ""
		}
	}
	return lookupGroup(gid)
}

// Close unmaps the chip. It does not remove the file; lines it holds stay
// claimed until their Output is closed. A second Close returns ErrClosed.
func (c *Chip) Close() error {
	if c.closed.Swap(true) {
		return core.ErrClosed
	}
	return c.release()
}

func (c *Chip) acquire() { c.refs.Add(1) }

func (c *Chip) release() error {
	if c.refs.Add(-1) == 0 {
		return sys.Unmap(c.mem)
	}
	return nil
}

// Remove unlinks the chip file and closes this handle. Other processes
// keep their mappings until they close.
func (c *Chip) Remove() error {
	err := os.Remove(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if cerr := c.Close(); cerr != nil && !errors.Is(cerr, core.ErrClosed) && err == nil {
		err = cerr
	}
	return err
}

// Name returns the chip's name (without "sim:").
func (c *Chip) Name() string { return c.name }

// Path returns the chip file.
func (c *Chip) Path() string { return c.path }

// Lines returns the number of lines.
func (c *Chip) Lines() int { return c.lines }

// RingSize returns the number of edges each line's ring keeps.
func (c *Chip) RingSize() int { return c.ring }

// Label returns the chip label.
func (c *Chip) Label() string { return getString(c.mem[hLabel : hLabel+nameLen]) }

func (c *Chip) group() string { return getString(c.mem[hGroup : hGroup+nameLen]) }

// SetFault turns a chip-wide fault switch on or off; it takes effect for
// every process at its next open, request or watch.
func (c *Chip) SetFault(f Fault, on bool) {
	p := c.u32(hFaults)
	if on {
		p.Or(uint32(f))
	} else {
		p.And(^uint32(f))
	}
}

// Faults returns the fault switches that are on.
func (c *Chip) Faults() Fault { return Fault(c.u32(hFaults).Load()) }

// SetLineBusy makes offset look held by consumer (a phantom holder, like a
// kernel driver or another tool keeping the line), or frees it when
// consumer is empty.
func (c *Chip) SetLineBusy(offset int, consumer string) error {
	if err := c.checkOffset("set busy", offset); err != nil {
		return err
	}
	off := c.lineOff(offset)
	flags := c.u32(off + lFlags)
	if consumer == "" {
		flags.And(^uint32(flagBusyFault))
		putString(c.mem[off+lConsumer:off+lConsumer+nameLen], "")
		return nil
	}
	putString(c.mem[off+lConsumer:off+lConsumer+nameLen], consumer)
	flags.Or(flagBusyFault)
	return nil
}

// LineInfo returns what `gpio ls` shows for offset.
func (c *Chip) LineInfo(offset int) (core.LineInfo, error) {
	if err := c.checkOffset("line info", offset); err != nil {
		return core.LineInfo{}, err
	}
	off := c.lineOff(offset)
	flags := c.u32(off + lFlags).Load()
	owner := c.u32(off + lOwner).Load()
	used := flags&flagBusyFault != 0 || (owner != 0 && sys.ProcessAlive(int(owner)))
	li := core.LineInfo{Offset: offset, Name: getString(c.mem[off+lName : off+lName+nameLen]), Used: used}
	if used {
		li.Consumer = getString(c.mem[off+lConsumer : off+lConsumer+nameLen])
		li.Output = flags&flagOutput != 0
		li.ActiveLow = flags&flagActiveLow != 0
		li.Drive = core.Drive(flags >> flagDriveShift & 3)
	}
	return li, nil
}

// Info returns the chip and all its lines.
func (c *Chip) Info() core.ChipInfo {
	ci := core.ChipInfo{Name: c.ref(), Path: c.path, Label: c.Label(), Lines: make([]core.LineInfo, c.lines)}
	for i := range c.lines {
		ci.Lines[i], _ = c.LineInfo(i)
	}
	return ci
}

// FindLine returns the offset of the line called name.
func (c *Chip) FindLine(name string) (int, error) {
	for i := range c.lines {
		off := c.lineOff(i)
		if getString(c.mem[off+lName:off+lName+nameLen]) == name {
			return i, nil
		}
	}
	return -1, &core.LineError{Op: "find line", Chip: c.ref(), Line: fmt.Sprintf("line %q", name), Kind: core.ErrLineNotFound}
}

// Level returns the physical level of offset: what a scope probe on the
// pin would read (true = high).
func (c *Chip) Level(offset int) (bool, error) {
	if err := c.checkOffset("read level", offset); err != nil {
		return false, err
	}
	return c.u32(c.lineOff(offset)+lLevel).Load() != 0, nil
}

// Pull drives the physical level of a line that is not requested as an
// output, like writing pull-up/pull-down to the kernel gpio-sim's sysfs
// "pull" attribute; an edge is published when the level changes. On a line
// held as output it has no effect (the output wins), as on the kernel sim.
func (c *Chip) Pull(offset int, high bool) error {
	if err := c.checkOffset("pull", offset); err != nil {
		return err
	}
	off := c.lineOff(offset)
	owner := c.u32(off + lOwner).Load()
	if c.u32(off+lFlags).Load()&flagOutput != 0 && owner != 0 && sys.ProcessAlive(int(owner)) {
		return nil
	}
	c.publish(off, offset, high)
	return nil
}

// publish sets the physical level of the line at record offset off and, if
// it changed, appends an edge to the line's ring. It allocates nothing and
// makes a system call only if a watcher sleeps.
func (c *Chip) publish(off uintptr, line int, high bool) {
	lock := c.u32(off + lLock)
	c.lockLine(lock)
	level := c.u32(off + lLevel)
	var v uint32
	if high {
		v = 1
	}
	if level.Load() == v {
		lock.Store(0)
		return
	}
	level.Store(v)
	head := c.u64(off + lHead)
	n := head.Load() + 1
	slot := c.slotOff(line, n)
	// Invalidate the slot first so a reader that raced to it sees the
	// overwrite (seq changes) rather than a mix of old and new fields.
	c.u64(slot + sSeq).Store(0)
	c.i64(slot + sTime).Store(sys.MonotonicNs())
	c.u64(slot + sChipSeq).Store(c.u64(hChipSeq).Add(1))
	c.u32(slot + sRising).Store(v)
	// Publishing order: slot seq, then head. Readers load head, then the
	// slot seq; atomics are sequentially consistent in Go, so a reader that
	// sees head ≥ n sees the finished slot.
	c.u64(slot + sSeq).Store(n)
	head.Store(n)
	lock.Store(0)
	c.u32(hEvGen).Add(1)
	if c.u32(hWaiters).Load() != 0 {
		sys.FutexWake(c.u32p(hEvGen))
	}
}

// lockLine takes a line's writer lock (a spin lock: the critical section is
// a handful of stores). A lock left by a dead process is broken.
func (c *Chip) lockLine(lock *atomic.Uint32) {
	me := c.pid
	for spins := 0; ; spins++ {
		if lock.CompareAndSwap(0, me) {
			return
		}
		if spins > 1000 {
			runtime.Gosched()
			if spins%10000 == 0 {
				if h := lock.Load(); h != 0 && h != me && !sys.ProcessAlive(int(h)) {
					lock.CompareAndSwap(h, 0)
				}
			}
		}
	}
}

// ref is the chip's reference as line specs carry it ("sim:NAME").
func (c *Chip) ref() string { return kind.SimChip(c.name).String() }

func (c *Chip) chipErr(op string, kind error, detail string, err error) *core.LineError {
	return &core.LineError{Op: op, Chip: c.ref(), Kind: kind, Detail: detail, Err: err}
}

func (c *Chip) checkOffset(op string, offset int) error {
	if offset < 0 || offset >= c.lines {
		return &core.LineError{Op: op, Chip: c.ref(), Line: fmt.Sprintf("line %d", offset), Kind: core.ErrOffsetRange,
			Detail: fmt.Sprintf("chip has %d lines (0..%d)", c.lines, c.lines-1)}
	}
	return nil
}

func (c *Chip) lineOff(i int) uintptr { return headerSize + uintptr(i)*lineSize }

func (c *Chip) slotOff(line int, seq uint64) uintptr {
	return headerSize + uintptr(c.lines)*lineSize +
		(uintptr(line)*uintptr(c.ring)+uintptr((seq-1)&c.mask))*slotSize
}

func (c *Chip) u32(off uintptr) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Add(c.base, off)) }
func (c *Chip) u32p(off uintptr) *uint32       { return (*uint32)(unsafe.Add(c.base, off)) }
func (c *Chip) u64(off uintptr) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Add(c.base, off)) }
func (c *Chip) i64(off uintptr) *atomic.Int64  { return (*atomic.Int64)(unsafe.Add(c.base, off)) }

func putString(dst []byte, s string) {
	clear(dst)
	copy(dst[:len(dst)-1], s)
}

func getString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// List returns the names of the simulated chips in Dir(dir), sorted.
func List(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(Dir(dir), FilePrefix+"*"))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for _, p := range m {
		names = append(names, strings.TrimPrefix(filepath.Base(p), FilePrefix))
	}
	return names, nil
}
