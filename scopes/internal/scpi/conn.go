package scpi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hilrig/hilrig/scopes"
)

// transport is a message stream to one instrument.
type transport interface {
	// write sends one complete program message (terminator included).
	write(p []byte, deadline time.Time) error
	// read reads some reply bytes; end is true when the transport marks
	// the end of a response message (VXI-11 END); raw sockets never do.
	read(p []byte, deadline time.Time) (n int, end bool, err error)
	// clear performs a device clear where the transport has one (VXI-11
	// device_clear); raw sockets have none and return nil.
	clear(deadline time.Time) error
	// interrupt makes a blocked read or write return promptly.
	interrupt()
	close() error
}

// Options tune a [Conn]. The zero value is usable.
type Options struct {
	// Timeout bounds each command or query; a resynchronisation waits
	// up to twice that for its marker. The ctx deadline, when earlier,
	// wins. Default 5 s.
	Timeout time.Duration
	// DrainQuiet is how long the stream must stay silent for a drain to
	// finish during resynchronisation. Default 50 ms.
	DrainQuiet time.Duration
	// MaxBlock caps a definite-length block (bytes). Default 64 MiB.
	MaxBlock int
	// Logger receives debug traces of resynchronisation; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.DrainQuiet <= 0 {
		o.DrainQuiet = 50 * time.Millisecond
	}
	if o.MaxBlock <= 0 {
		o.MaxBlock = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

const maxLine = 1 << 20

// Conn is a SCPI session with one instrument over a raw socket or VXI-11.
//
// Every method blocks on I/O and is bounded by Options.Timeout and ctx.
// Methods are safe for concurrent use (a mutex serialises them, because a
// SCPI session is strictly request/reply). After a timeout, cancellation or
// garbage reply the Conn resynchronises before its next command; see the
// package documentation.
type Conn struct {
	mu       sync.Mutex
	t        transport
	addr     string
	o        Options
	buf      []byte // received, not yet consumed
	skipTerm bool   // a block's trailing newline may still arrive
	desync   bool
	closed   bool
	resyncs  int
	// attempts counts resynchronisations begun (completed or not).
	attempts int
	// lastMarker is the previous resynchronisation's marker; the next
	// one differs, so its late replies cannot pass for the new one.
	lastMarker []int
}

func newConn(t transport, addr string, o Options) *Conn {
	return &Conn{t: t, addr: addr, o: o.withDefaults(), buf: make([]byte, 0, 4096)}
}

// Addr is the address the Conn was dialled with.
func (c *Conn) Addr() string { return c.addr }

// Resyncs counts completed resynchronisations (for tests and diagnostics).
func (c *Conn) Resyncs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resyncs
}

// Invalidate marks the session out of sync, for callers that found a reply
// unusable after it was read (for example a number that did not parse).
// The next command resynchronises first.
func (c *Conn) Invalidate() {
	c.mu.Lock()
	c.desync = true
	c.mu.Unlock()
}

// Write sends a command that has no reply.
func (c *Conn) Write(ctx context.Context, cmd string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	dl, stop, err := c.begin(ctx)
	if err != nil {
		return err
	}
	defer stop()
	return c.send(ctx, cmd, dl)
}

// Query sends cmd and returns its one-line reply without the terminator.
// A reply holding control bytes (other than tab) or non-ASCII bytes wraps
// [scopes.ErrGarbage].
func (c *Conn) Query(ctx context.Context, cmd string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dl, stop, err := c.begin(ctx)
	if err != nil {
		return "", err
	}
	defer stop()
	if err := c.send(ctx, cmd, dl); err != nil {
		return "", err
	}
	line, err := c.readLine(ctx, dl)
	if err != nil {
		return "", fmt.Errorf("%s: %q: %w", c.addr, cmd, err)
	}
	for _, b := range line {
		if (b < 0x20 && b != '\t') || b > 0x7e {
			c.desync = true
			return "", fmt.Errorf("%s: %q: %w: %q", c.addr, cmd, scopes.ErrGarbage, clip(string(line)))
		}
	}
	return string(line), nil
}

// QueryBlock sends cmd and reads an IEEE 488.2 definite-length block reply
// (#<d><len><data>), reading exactly len data bytes however the transport
// splits them. The returned slice is freshly allocated.
func (c *Conn) QueryBlock(ctx context.Context, cmd string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dl, stop, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := c.send(ctx, cmd, dl); err != nil {
		return nil, err
	}
	data, err := c.readBlock(ctx, dl)
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %w", c.addr, cmd, err)
	}
	return data, nil
}

// Resync forces a resynchronisation now (drain, *CLS, *ESE? marker).
func (c *Conn) Resync(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return scopes.ErrClosed
	}
	dl := c.deadline(ctx)
	stop := context.AfterFunc(ctx, c.t.interrupt)
	defer stop()
	return c.resync(ctx, dl)
}

// Close ends the session (VXI-11: destroy_link). It first interrupts a
// command blocked in another goroutine so Close does not wait out its
// timeout. A second Close returns [scopes.ErrClosed].
func (c *Conn) Close() error {
	c.t.interrupt()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return scopes.ErrClosed
	}
	c.closed = true
	return c.t.close()
}

func (c *Conn) deadline(ctx context.Context) time.Time {
	dl := time.Now().Add(c.o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	return dl
}

// begin checks state, resynchronises when needed and arms ctx
// cancellation. The caller holds c.mu.
func (c *Conn) begin(ctx context.Context) (time.Time, func() bool, error) {
	if c.closed {
		return time.Time{}, nil, scopes.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, nil, err
	}
	stop := context.AfterFunc(ctx, c.t.interrupt)
	if c.desync {
		if err := c.resync(ctx, c.deadline(ctx)); err != nil {
			stop()
			return time.Time{}, nil, err
		}
	}
	return c.deadline(ctx), stop, nil
}

func (c *Conn) send(ctx context.Context, cmd string, dl time.Time) error {
	msg := make([]byte, 0, len(cmd)+1)
	msg = append(msg, cmd...)
	msg = append(msg, '\n')
	if err := c.t.write(msg, dl); err != nil {
		c.desync = true
		return fmt.Errorf("%s: send %q: %w", c.addr, cmd, c.ioErr(ctx, err))
	}
	return nil
}

// ioErr classifies a transport error and marks the session out of sync.
func (c *Conn) ioErr(ctx context.Context, err error) error {
	c.desync = true
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, scopes.ErrTimeout) || ctx.Err() != nil {
		if errors.Is(err, scopes.ErrTimeout) {
			return err
		}
		return fmt.Errorf("%w: %w", scopes.ErrTimeout, err)
	}
	return err
}

// fill reads more bytes into c.buf.
func (c *Conn) fill(ctx context.Context, dl time.Time) error {
	if len(c.buf) == cap(c.buf) {
		nb := make([]byte, len(c.buf), 2*cap(c.buf)+4096)
		copy(nb, c.buf)
		c.buf = nb
	}
	n, end, err := c.t.read(c.buf[len(c.buf):cap(c.buf)], dl)
	c.buf = c.buf[:len(c.buf)+n]
	if end && (len(c.buf) == 0 || c.buf[len(c.buf)-1] != '\n') {
		// VXI-11 END without a newline terminator: terminate the message
		// so line reads complete.
		c.buf = append(c.buf, '\n')
	}
	if err != nil {
		if n > 0 && !errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		return c.ioErr(ctx, err)
	}
	return nil
}

func (c *Conn) consumeTerm() {
	if !c.skipTerm || len(c.buf) == 0 {
		return
	}
	if c.buf[0] == '\n' {
		c.buf = c.buf[1:]
		c.skipTerm = false
	} else if c.buf[0] == '\r' && len(c.buf) > 1 && c.buf[1] == '\n' {
		c.buf = c.buf[2:]
		c.skipTerm = false
	} else if c.buf[0] != '\r' {
		c.skipTerm = false
	}
}

func (c *Conn) readLine(ctx context.Context, dl time.Time) ([]byte, error) {
	for {
		c.consumeTerm()
		if i := bytes.IndexByte(c.buf, '\n'); i >= 0 && !(c.skipTerm && i == 0) {
			line := bytes.TrimRight(c.buf[:i], "\r")
			out := make([]byte, len(line))
			copy(out, line)
			c.buf = c.buf[:copy(c.buf, c.buf[i+1:])]
			return out, nil
		}
		if len(c.buf) > maxLine {
			c.desync = true
			c.buf = c.buf[:0]
			return nil, fmt.Errorf("%w: reply line longer than %d bytes", scopes.ErrGarbage, maxLine)
		}
		if err := c.fill(ctx, dl); err != nil {
			return nil, err
		}
	}
}

func (c *Conn) readBlock(ctx context.Context, dl time.Time) ([]byte, error) {
	for {
		c.consumeTerm()
		hdr, n, err := ParseBlockHeader(c.buf)
		if errors.Is(err, errNeedMore) {
			if err := c.fill(ctx, dl); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			c.desync = true
			return nil, err
		}
		if n < 0 {
			// "#0": indefinite length, terminated by the message end
			// (newline on a raw socket, END on VXI-11).
			c.buf = c.buf[hdr:]
			line, err := c.readLine(ctx, dl)
			return line, err
		}
		if n > c.o.MaxBlock {
			c.desync = true
			return nil, fmt.Errorf("%w: block of %d bytes exceeds limit %d", scopes.ErrGarbage, n, c.o.MaxBlock)
		}
		for len(c.buf) < hdr+n {
			if err := c.fill(ctx, dl); err != nil {
				return nil, err
			}
		}
		out := make([]byte, n)
		copy(out, c.buf[hdr:hdr+n])
		c.buf = c.buf[:copy(c.buf, c.buf[hdr+n:])]
		c.skipTerm = true
		c.consumeTerm()
		return out, nil
	}
}

// markerRounds is how many random *ESE values one resynchronisation
// writes and reads back: 3 × 8 bits, so a stale reply sequence matches a
// fresh marker by chance with probability 2⁻²⁴, and never the previous
// marker's (a new marker always differs from the last one).
const markerRounds = 3

// markerExtra bounds the extra rounds a resynchronisation adds, drawn
// afresh for every one after a Conn's first. A fault that recurs every N
// replies, N being what one recovery plus the next read spends (a link
// that stalls every 5th reply against a Keysight read: 4 marker replies +
// 1 query; every 12th against a frozen read of 8), met every attempt when
// each recovery spent the same; a length drawn from
// markerRounds..markerRounds+markerExtra shifts the phase, so no period
// can lock onto it.
const markerExtra = 2

// resyncTimeouts is how many per-command timeouts a resynchronisation
// waits for its marker.
const resyncTimeouts = 2

// resync proves the reply stream is aligned again after a timeout,
// cancellation or garbage reply. The caller holds c.mu.
//
// Device clear (VXI-11), discard every buffered byte and drain the socket
// until quiet, then *CLS and a marker that no earlier reply can imitate:
// "*ESE?" (the user's mask, restored afterwards), then markerRounds times
// "*ESE v" + "*ESE?" with fresh random v (0..255). *ESE and *ESE? are
// mandatory IEEE 488.2 commands that every supported instrument executes
// in order and that change nothing a driver reads (the event status
// enable only masks the status byte's ESB summary bit). The resync reads
// lines until the last markerRounds lines are exactly those values, in
// order: any late, stale or garbled reply — including an earlier
// resync's marker, which used other values — comes before them and is
// discarded. Then every byte still buffered or arriving is discarded
// too, so nothing behind the marker can become the next query's answer.
func (c *Conn) resync(ctx context.Context, dl time.Time) error {
	c.o.Logger.Debug("scpi resync", "addr", c.addr)
	c.discard()
	if err := c.t.clear(dl); err != nil {
		return fmt.Errorf("%s: resync: device clear: %w", c.addr, c.ioErr(ctx, err))
	}
	if err := c.drain(ctx, dl); err != nil {
		return err
	}
	rounds := markerRounds
	if c.attempts > 0 {
		rounds += rand.IntN(markerExtra + 1)
	}
	c.attempts++
	marker := c.newMarker(rounds)
	// The marker gets twice the per-command timeout: one late reply (a
	// link that stalls now and then) then delays the recovery instead of
	// failing it, and the next attempt meeting the same stall again.
	dl = c.deadline(ctx)
	if n := time.Now().Add(resyncTimeouts * c.o.Timeout); n.After(dl) {
		dl = n
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl = d
		}
	}
	cmds := []string{"*CLS", "*ESE?"}
	for _, v := range marker {
		cmds = append(cmds, fmt.Sprintf("*ESE %d", v), "*ESE?")
	}
	for _, cmd := range cmds {
		if err := c.t.write([]byte(cmd+"\n"), dl); err != nil {
			return fmt.Errorf("%s: resync: send %s: %w", c.addr, cmd, c.ioErr(ctx, err))
		}
	}
	// seen holds the last len(marker)+1 lines: the user's *ESE? answer
	// followed by the marker values.
	seen := make([]string, 0, len(marker)+1)
	for {
		line, err := c.readLine(ctx, dl)
		if err != nil {
			c.desync = true
			return fmt.Errorf("%s: resync: waiting for the *ESE? marker %v: %w", c.addr, marker, err)
		}
		if len(seen) == cap(seen) {
			c.o.Logger.Debug("scpi resync discarded reply", "addr", c.addr, "reply", clip(seen[0]))
			seen = seen[:copy(seen, seen[1:])]
		}
		seen = append(seen, string(line))
		if markerSeen(seen, marker) {
			break
		}
	}
	// The line before the marker answers the first *ESE? unless it was
	// lost; restore the mask only from a plausible answer.
	restore := 0
	if len(seen) == len(marker)+1 {
		if v, ok := parseMask(seen[0]); ok {
			restore = v
		}
	}
	c.lastMarker = marker
	c.discard()
	if err := c.t.write([]byte(fmt.Sprintf("*ESE %d\n", restore)), dl); err != nil {
		return fmt.Errorf("%s: resync: restore *ESE: %w", c.addr, c.ioErr(ctx, err))
	}
	if err := c.drain(ctx, dl); err != nil {
		return err
	}
	c.desync = false
	c.resyncs++
	return nil
}

// discard drops every received, unconsumed byte.
func (c *Conn) discard() {
	if len(c.buf) > 0 {
		c.o.Logger.Debug("scpi resync discarded buffered bytes", "addr", c.addr, "n", len(c.buf))
	}
	c.buf = c.buf[:0]
	c.skipTerm = false
}

// newMarker draws n marker values, never repeating the previous marker.
func (c *Conn) newMarker(n int) []int {
	m := make([]int, n)
	for {
		for i := range m {
			m[i] = rand.IntN(256)
		}
		if !slices.Equal(m, c.lastMarker) {
			return m
		}
	}
}

// markerSeen reports whether the last len(marker) lines of seen are
// exactly the marker values (NR1, an optional '+' allowed).
func markerSeen(seen []string, marker []int) bool {
	if len(seen) < len(marker) {
		return false
	}
	tail := seen[len(seen)-len(marker):]
	for i, v := range marker {
		got, ok := parseMask(tail[i])
		if !ok || got != v {
			return false
		}
	}
	return true
}

// parseMask parses an *ESE? reply: an NR1 integer 0..255.
func parseMask(s string) (int, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "+")
	if s == "" || len(s) > 3 {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	return v, err == nil && v >= 0 && v <= 255
}

// drain discards input until the stream has been quiet for DrainQuiet.
func (c *Conn) drain(ctx context.Context, dl time.Time) error {
	var scratch [4096]byte
	for {
		q := time.Now().Add(c.o.DrainQuiet)
		if q.After(dl) {
			q = dl
		}
		n, _, err := c.t.read(scratch[:], q)
		if n > 0 {
			c.o.Logger.Debug("scpi drain discarded bytes", "addr", c.addr, "n", n)
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
				if n == 0 {
					return nil // quiet
				}
				continue
			}
			c.desync = true
			return fmt.Errorf("%s: resync: drain: %w", c.addr, c.ioErr(ctx, err))
		}
		if !time.Now().Before(dl) {
			c.desync = true
			return fmt.Errorf("%s: resync: drain: %w: instrument never went quiet", c.addr, scopes.ErrTimeout)
		}
	}
}
