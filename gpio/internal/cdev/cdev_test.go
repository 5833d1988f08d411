//go:build linux

package cdev

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio/internal/core"
)

// event encodes a struct gpio_v2_line_event.
func event(ts uint64, rising bool, offset, seq, lseq uint32) []byte {
	b := make([]byte, eventSize)
	binary.NativeEndian.PutUint64(b[0:], ts)
	id := uint32(2)
	if rising {
		id = 1
	}
	binary.NativeEndian.PutUint32(b[8:], id)
	binary.NativeEndian.PutUint32(b[12:], offset)
	binary.NativeEndian.PutUint32(b[16:], seq)
	binary.NativeEndian.PutUint32(b[20:], lseq)
	return b
}

// pipeWatcher feeds a Watcher from a pipe instead of a line request fd:
// the decoding and drop detection are tested without a GPIO chip.
func pipeWatcher(t *testing.T, offsets ...int) (*Watcher, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &Watcher{f: r, ref: "pipe", offsets: offsets, lastSeq: make([]uint32, len(offsets))}, w
}

func TestReadEdgesDecodes(t *testing.T) {
	wt, pw := pipeWatcher(t, 3, 4)
	defer wt.Close()
	var in []byte
	in = append(in, event(100, true, 3, 1, 1)...)
	in = append(in, event(200, true, 4, 2, 1)...)
	in = append(in, event(300, false, 3, 3, 2)...)
	pw.Write(in)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	buf := make([]core.Edge, 8)
	n, err := wt.ReadEdges(ctx, buf)
	if err != nil || n != 3 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	want := []core.Edge{
		{Line: 3, Rising: true, TimestampNs: 100, Seqno: 1, LineSeqno: 1},
		{Line: 4, Rising: true, TimestampNs: 200, Seqno: 2, LineSeqno: 1},
		{Line: 3, Rising: false, TimestampNs: 300, Seqno: 3, LineSeqno: 2},
	}
	for i := range want {
		if buf[i] != want[i] {
			t.Fatalf("edge %d = %+v, want %+v", i, buf[i], want[i])
		}
	}
	// A gap in line 3's seqno (2 → 6) is reported as 3 dropped edges.
	pw.Write(event(400, true, 3, 7, 6))
	n, err = wt.ReadEdges(ctx, buf)
	var oe *core.OverflowError
	if n != 1 || !errors.As(err, &oe) || oe.Dropped != 3 || oe.Line != 3 || wt.Dropped() != 3 {
		t.Fatalf("n=%d err=%v dropped=%d", n, err, wt.Dropped())
	}
	// Deadline and Close.
	short, c2 := context.WithTimeout(ctx, 30*time.Millisecond)
	defer c2()
	if _, err := wt.ReadEdges(short, buf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("idle read: %v", err)
	}
	if a := testing.AllocsPerRun(50, func() {
		pw.Write(event(500, true, 4, 8, 2)) // allocation here is the test's
		wt.lastSeq[1] = 1
		if _, err := wt.ReadEdges(ctx, buf[:1]); err != nil {
			t.Fatal(err)
		}
	}); a > 1 {
		t.Fatalf("ReadEdges allocates: %v per call (1 is the test's event buffer)", a)
	}
}

func FuzzReadEdges(f *testing.F) {
	f.Add(event(1, true, 0, 1, 1))
	f.Add(append(event(1, true, 0, 1, 1), 1, 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || len(b) > 4096 {
			return
		}
		wt, pw := pipeWatcher(t, 0, 1)
		defer wt.Close()
		pw.Write(b)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		buf := make([]core.Edge, 4)
		for {
			if _, err := wt.ReadEdges(ctx, buf); err != nil && !errors.Is(err, core.ErrOverflow) {
				return
			}
		}
	})
}

func TestMissingChip(t *testing.T) {
	_, err := RequestOutput(core.Request{Chip: "/dev/gpiochip-none", Offset: 1}, false)
	if !errors.Is(err, core.ErrChipMissing) {
		t.Fatalf("err = %v", err)
	}
	_, err = Watch([]core.Request{{Chip: "gpiochip77", Offset: 1}})
	if !errors.Is(err, core.ErrChipMissing) {
		t.Fatalf("err = %v", err)
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	wt, _ := pipeWatcher(t, 0)
	done := make(chan error, 1)
	go func() {
		buf := make([]core.Edge, 1)
		_, err := wt.ReadEdges(context.Background(), buf)
		done <- err
	}()
	if err := wt.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, core.ErrClosed) {
			t.Fatalf("pending read after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock ReadEdges")
	}
	if err := wt.Close(); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestReadEdgesClosedBetweenCheckAndWait: a Close that lands after
// ReadEdges checked the closed flag but before it set the read deadline
// (the descriptor is closed, the flag not yet seen) still ends the read
// with ErrClosed. It returned "gpio: watch …: use of closed file" (found in
// the arm64 virtual board's kernel conformance run, CI 2026-12-07).
func TestReadEdgesClosedBetweenCheckAndWait(t *testing.T) {
	w, pw := pipeWatcher(t, 3)
	defer pw.Close()
	// The interleaving, made deterministic: Close runs right after the
	// check saw the watcher open, as the wait sets its deadline.
	w.f = closeOnDeadline{File: w.f.(*os.File), close: func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	}}
	dst := make([]core.Edge, 4)
	if _, err := w.ReadEdges(context.Background(), dst); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("ReadEdges on a descriptor closed under it: %v, want ErrClosed", err)
	}
}

// closeOnDeadline is a Watcher's file that runs close (the Watcher's Close)
// when ReadEdges sets its read deadline: after its closed check, before its
// wait.
type closeOnDeadline struct {
	*os.File
	close func()
}

func (c closeOnDeadline) SetReadDeadline(t time.Time) error {
	c.close()
	return c.File.SetReadDeadline(t)
}
