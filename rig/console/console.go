// Package console captures a board's console (a serial device, or any
// reader such as a QEMU board's console) line by line into a file of the
// run directory, every line stamped with CLOCK_MONOTONIC and wall time,
// the file size-bounded (one rotation: <file> and <file>.1). Kernel
// panic, oops, watchdog and OOM lines are flagged. The last lines stay in
// memory for attaching to failing cases and to soak fault windows.
//
// A Capture is safe for concurrent use; one goroutine reads the source.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/internal/monoclock"
	"github.com/hilrig/hilrig/rig/console/internal/serial"
)

// Flag kinds of console lines.
const (
	Panic    = "panic"
	Oops     = "oops"
	Watchdog = "watchdog"
	OOM      = "oom"
)

// patterns in the order they are tried; the first match names the kind.
var patterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{Panic, regexp.MustCompile(`Kernel panic - not syncing|sysrq: Trigger a crash|\bpanic\(\)|^panic: `)},
	{Oops, regexp.MustCompile(`\bOops[:\s]|\bBUG: (unable to handle|kernel NULL pointer)|general protection fault|Unable to handle kernel`)},
	{Watchdog, regexp.MustCompile(`watchdog: BUG: soft lockup|hard LOCKUP|NMI watchdog|rcu_sched detected stalls|INFO: task .* blocked for more than|watchdog did not stop`)},
	{OOM, regexp.MustCompile(`Out of memory: Kill|oom-kill|invoked oom-killer|Killed process \d+`)},
}

// Classify returns the flag kind of a console line ("" for none).
func Classify(line string) string {
	for _, p := range patterns {
		if p.re.MatchString(line) {
			return p.kind
		}
	}
	return ""
}

// Line is one captured console line.
type Line struct {
	Mono time.Duration // CLOCK_MONOTONIC when the line ended (comparable with agent and GPIO stamps)
	Wall time.Time     // wall clock when the line ended
	Text string
	Flag string // "" or a kind (Panic, Oops, Watchdog, OOM)
}

// String is the file form: "<mono s> <wall RFC3339> [<flag>] <text>".
func (l Line) String() string {
	f := ""
	if l.Flag != "" {
		f = "[" + l.Flag + "] "
	}
	return fmt.Sprintf("%12.6f %s %s%s", l.Mono.Seconds(), l.Wall.UTC().Format("2006-01-02T15:04:05.000000Z"), f, l.Text)
}

// Options configure a capture.
type Options struct {
	// Path is the capture file (created; rotated to Path+".1").
	Path string
	// MaxBytes bounds Path and Path.1 together. Default 64 MiB.
	MaxBytes int64
	// Keep is how many recent lines stay in memory (Tail, Between).
	// Default 2000.
	Keep int
	// OnFlag, if set, is called (from the reading goroutine) for every
	// flagged line; it must not block.
	OnFlag func(Line)
}

// maxLine bounds one line (a console spewing without newlines).
const maxLine = 4096

// Capture is a running console capture.
type Capture struct {
	Board string
	opts  Options
	start time.Time
	src   io.ReadCloser

	mu      sync.Mutex
	f       *os.File
	size    int64
	ring    []Line
	next    int
	n       int
	flags   []Line
	subs    map[chan Line]struct{}
	done    chan struct{}
	readErr error
}

// Start captures src (closed by Close) for board. Blocks only to create
// the file; the reading runs in a goroutine until src ends or Close.
func Start(board string, src io.ReadCloser, opts Options) (*Capture, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 64 << 20
	}
	if opts.Keep <= 0 {
		opts.Keep = 2000
	}
	f, err := os.OpenFile(opts.Path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("console %s: %w", board, err)
	}
	c := &Capture{Board: board, opts: opts, start: time.Now(), src: src, f: f,
		ring: make([]Line, opts.Keep), subs: map[chan Line]struct{}{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

// Open starts capturing board's serial console (its console: block) into
// path. The vm console is the rig's (vmboard) and is not opened here.
func Open(board string, cfg fixtures.Console, path string) (*Capture, error) {
	if cfg.Device == fixtures.ConsoleVM {
		return nil, fmt.Errorf("console %s: the vm console is read from the QEMU board, not opened as a device: %w", board, errors.ErrUnsupported)
	}
	baud := cfg.Baud
	if baud == 0 {
		baud = 115200
	}
	f, err := serial.Open(cfg.Device, baud, cfg.Parity)
	if err != nil {
		return nil, fmt.Errorf("console %s: %w", board, err)
	}
	return Start(board, f, Options{Path: path, MaxBytes: int64(cfg.MaxBytes)})
}

func (c *Capture) read() {
	defer close(c.done)
	r := bufio.NewReaderSize(c.src, maxLine)
	for {
		b, err := r.ReadSlice('\n')
		if len(b) > 0 {
			c.add(b)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long line: kept in maxLine pieces
		}
		if err != nil {
			c.mu.Lock()
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.readErr = err
			}
			for ch := range c.subs {
				close(ch)
			}
			c.subs = nil
			c.mu.Unlock()
			return
		}
	}
}

func trimEOL(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}

func (c *Capture) add(b []byte) {
	now := time.Now()
	l := Line{Mono: time.Duration(monoclock.Now()), Wall: now, Text: trimEOL(b)}
	l.Flag = Classify(l.Text)
	s := l.String() + "\n"
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.size+int64(len(s)) > c.opts.MaxBytes/2 {
		c.rotate()
	}
	if c.f != nil {
		n, _ := c.f.WriteString(s)
		c.size += int64(n)
	}
	c.ring[c.next] = l
	c.next = (c.next + 1) % len(c.ring)
	c.n = min(c.n+1, len(c.ring))
	if l.Flag != "" {
		if len(c.flags) < 1000 {
			c.flags = append(c.flags, l)
		}
		if c.opts.OnFlag != nil {
			c.opts.OnFlag(l)
		}
	}
	for ch := range c.subs {
		select {
		case ch <- l:
		default: // a slow follower loses lines, never the capture
		}
	}
}

// rotate moves the file to .1 (replacing the older one). Called with mu.
func (c *Capture) rotate() {
	if c.f == nil {
		return
	}
	c.f.Close()
	_ = os.Rename(c.opts.Path, c.opts.Path+".1")
	f, err := os.OpenFile(c.opts.Path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		c.f = nil
		c.readErr = fmt.Errorf("console %s: rotating %s: %w", c.Board, c.opts.Path, err)
		return
	}
	c.f = f
	n, _ := fmt.Fprintf(f, "# hilrig: earlier lines are in %s.1 (older ones were dropped: max_bytes %d)\n", c.opts.Path, c.opts.MaxBytes)
	c.size = int64(n)
}

// lines returns the kept lines, oldest first. Called with mu.
func (c *Capture) lines() []Line {
	out := make([]Line, 0, c.n)
	for i := range c.n {
		out = append(out, c.ring[(c.next-c.n+i+len(c.ring))%len(c.ring)])
	}
	return out
}

// Tail returns the last n lines kept in memory, oldest first.
func (c *Capture) Tail(n int) []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	ls := c.lines()
	return ls[max(len(ls)-n, 0):]
}

// Between returns the kept lines whose wall time is in [from, to].
func (c *Capture) Between(from, to time.Time) []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Line
	for _, l := range c.lines() {
		if !l.Wall.Before(from) && !l.Wall.After(to) {
			out = append(out, l)
		}
	}
	return out
}

// Flags returns the flagged lines so far (at most 1000).
func (c *Capture) Flags() []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Line(nil), c.flags...)
}

// Follow sends every line captured from now on to w until ctx ends or the
// source ends. Blocks.
func (c *Capture) Follow(ctx context.Context, w io.Writer) error {
	ch := make(chan Line, 256)
	c.mu.Lock()
	if c.subs == nil {
		c.mu.Unlock()
		return c.Err()
	}
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.subs != nil {
			delete(c.subs, ch)
		}
		c.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l, ok := <-ch:
			if !ok {
				return c.Err()
			}
			if _, err := fmt.Fprintln(w, l); err != nil {
				return err
			}
		}
	}
}

// Err is the error that ended the reading (nil for EOF or Close).
func (c *Capture) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// Done is closed when the source has ended.
func (c *Capture) Done() <-chan struct{} { return c.done }

// Close stops the capture: it closes the source, waits for the reader and
// closes the file.
func (c *Capture) Close() error {
	err := c.src.Close()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		if cerr := c.f.Close(); err == nil {
			err = cerr
		}
		c.f = nil
	}
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// Path is the capture file (older lines in Path+".1").
func (c *Capture) Path() string { return c.opts.Path }
