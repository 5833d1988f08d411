package scpi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/internal/scpi"
)

// scripted is a raw-socket instrument whose replies the test writes by hand,
// so it can split them into arbitrary TCP segments.
type scripted struct {
	ln   net.Listener
	cmds chan string
	conn chan net.Conn
}

func newScripted(t *testing.T) *scripted {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{ln: ln, cmds: make(chan string, 64), conn: make(chan net.Conn, 1)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.conn <- c
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			s.cmds <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		select {
		case c := <-s.conn:
			c.Close()
		default:
		}
		wg.Wait()
	})
	return s
}

func (s *scripted) accept(t *testing.T) net.Conn {
	select {
	case c := <-s.conn:
		s.conn <- c
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection")
		return nil
	}
}

func (s *scripted) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-s.cmds:
		if got != want {
			t.Fatalf("instrument got %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("instrument never got %q", want)
	}
}

// answerMarker plays the instrument's side of a resynchronisation: *CLS,
// the user's *ESE? (answered 0), the *ESE v / *ESE? marker rounds, and the
// restore; before is sent ahead of the answers (a late reply).
func (s *scripted) answerMarker(t *testing.T, srv net.Conn, before string) {
	t.Helper()
	s.expect(t, "*CLS")
	s.expect(t, "*ESE?")
	reply := before + "0\n"
	for range 3 {
		var cmd string
		select {
		case cmd = <-s.cmds:
		case <-time.After(5 * time.Second):
			t.Errorf("instrument never got the marker")
			return
		}
		v, ok := strings.CutPrefix(cmd, "*ESE ")
		if !ok {
			t.Errorf("instrument got %q, want *ESE <v>", cmd)
			return
		}
		s.expect(t, "*ESE?")
		reply += v + "\n"
	}
	writeSegments(t, srv, []byte(reply), 1, 2, 3)
	s.expect(t, "*ESE 0")
}

// writeSegments writes p in pieces with TCP_NODELAY so they leave as
// separate segments; each write is flushed before the next.
func writeSegments(t *testing.T, c net.Conn, p []byte, sizes ...int) {
	t.Helper()
	for _, n := range sizes {
		if n > len(p) {
			n = len(p)
		}
		if _, err := c.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
		time.Sleep(2 * time.Millisecond) // pacing so the kernel cannot coalesce; not synchronisation
	}
	if len(p) > 0 {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
	}
}

func dial(t *testing.T, s *scripted, timeout time.Duration) *scpi.Conn {
	c, err := scpi.DialRaw(t.Context(), s.ln.Addr().String(), scpi.Options{Timeout: timeout, DrainQuiet: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestBlockSplitAcrossSegments(t *testing.T) {
	s := newScripted(t)
	c := dial(t, s, 5*time.Second)
	payload := bytes.Repeat([]byte{'\n', 0, 0xff, '#', '9'}, 2000) // newlines and '#' inside the data
	msg := append([]byte("#510000"), payload...)
	msg = append(msg, '\n')
	type res struct {
		b   []byte
		err error
	}
	done := make(chan res, 1)
	go func() {
		b, err := c.QueryBlock(t.Context(), "CURVe?")
		done <- res{b, err}
	}()
	s.expect(t, "CURVe?")
	srv := s.accept(t)
	// split inside the header, inside the length digits and in the data
	writeSegments(t, srv, msg, 1, 3, 2, 700, 4000)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !bytes.Equal(r.b, payload) {
		t.Fatalf("block of %d bytes differs from the %d sent", len(r.b), len(payload))
	}
	// the trailing newline must not leak into the next reply
	go func() {
		s.expect(t, "*IDN?")
		writeSegments(t, srv, []byte("X,Y,Z,1\n"), 3)
	}()
	got, err := c.Query(t.Context(), "*IDN?")
	if err != nil || got != "X,Y,Z,1" {
		t.Fatalf("after block: %q, %v", got, err)
	}
}

// timeOutQuery sends query q on a context that expires after 100 ms,
// fails t unless the error is ErrTimeout, and returns the server side
// of the connection once the simulated instrument has read q.
func timeOutQuery(t *testing.T, s *scripted, c *scpi.Conn, q string) net.Conn {
	t.Helper()
	short, cancelShort := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancelShort()
	if _, err := c.Query(short, q); !errors.Is(err, scopes.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	s.expect(t, q)
	return s.accept(t)
}

// queryAfterResync sends q (within 5 s) while the instrument, on
// another goroutine, answers the resync marker (after writing before),
// then reads q and replies reply.
func queryAfterResync(t *testing.T, s *scripted, srv net.Conn, c *scpi.Conn, before, q, reply string) (string, error) {
	t.Helper()
	go func() {
		s.answerMarker(t, srv, before)
		s.expect(t, q)
		srv.Write([]byte(reply))
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return c.Query(ctx, q)
}

func TestLateReplyIsDiscardedByResync(t *testing.T) {
	s := newScripted(t)
	c := dial(t, s, 3*time.Second)
	srv := timeOutQuery(t, s, c, "MEAS:MEAN?")
	// The late reply arrives after the timeout.
	if _, err := srv.Write([]byte("1.5E-06\n")); err != nil {
		t.Fatal(err)
	}
	got, err := queryAfterResync(t, s, srv, c, "", "MEAS:MAX?", "2.5E-06\n")
	if err != nil {
		t.Fatal(err)
	}
	if got != "2.5E-06" {
		t.Fatalf("got %q: the stale reply was read as the answer", got)
	}
	if c.Resyncs() != 1 {
		t.Fatalf("resyncs = %d, want 1", c.Resyncs())
	}
}

func TestLateReplyArrivingDuringResync(t *testing.T) {
	s := newScripted(t)
	c := dial(t, s, 3*time.Second)
	srv := timeOutQuery(t, s, c, "SLOW?")
	// in-order instrument: the late reply precedes the marker
	got, err := queryAfterResync(t, s, srv, c, "42\n", "NEXT?", "7\n")
	if err != nil || got != "7" {
		t.Fatalf("got %q, %v; want 7", got, err)
	}
}

func TestGarbageReply(t *testing.T) {
	s := newScripted(t)
	c := dial(t, s, time.Second)
	go func() {
		s.expect(t, "*IDN?")
		srv := s.accept(t)
		srv.Write([]byte("\x00\xffjunk\n"))
	}()
	if _, err := c.Query(t.Context(), "*IDN?"); !errors.Is(err, scopes.ErrGarbage) {
		t.Fatalf("got %v, want ErrGarbage", err)
	}
}

func TestCloseTwice(t *testing.T) {
	s := newScripted(t)
	c, err := scpi.DialRaw(t.Context(), s.ln.Addr().String(), scpi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, scopes.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok      bool
		v       float64
		garbage bool
	}{
		{"1.5E-06", true, 1.5e-6, false},
		{" +12\n", true, 12, false},
		{"9.91E37", false, 0, false},
		{"9.9E+37", false, 0, false},
		{"+9.9E+37", false, 0, false},
		{"1E400", false, 0, false},
		{"****", false, 0, false},
		{"OFF", false, 0, false},
		{"NaN", false, 0, true},
		{"Inf", false, 0, true},
		{"1.0E-6 s", false, 0, true},
		{"", false, 0, true},
	} {
		v, err := scpi.ParseStat(tc.in)
		if tc.garbage {
			if !errors.Is(err, scopes.ErrGarbage) {
				t.Errorf("ParseStat(%q) err = %v, want ErrGarbage", tc.in, err)
			}
			continue
		}
		if err != nil || v.OK != tc.ok || (tc.ok && v.V != tc.v) {
			t.Errorf("ParseStat(%q) = %v, %v; want ok=%v v=%v", tc.in, v, err, tc.ok, tc.v)
		}
	}
}

func TestParseEvents(t *testing.T) {
	evs, err := scpi.ParseEvents(`113,"Undefined header; Command not found; MEAS:FOO",221,"Settings conflict, ""quoted"""`)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Code != 113 || evs[1].Text != `Settings conflict, "quoted"` {
		t.Fatalf("%+v", evs)
	}
}

func TestParseBlockHeader(t *testing.T) {
	for _, tc := range []struct {
		in     string
		hdr, n int
		err    bool
	}{
		{"#15hello", 3, 5, false},
		{"#0", 2, -1, false},
		{"#210", 4, 10, false},
		{"#A", 0, 0, true},
		{"X1", 0, 0, true},
		{"#3a00", 0, 0, true},
	} {
		hdr, n, err := scpi.ParseBlockHeader([]byte(tc.in))
		if (err != nil) != tc.err || (!tc.err && (hdr != tc.hdr || n != tc.n)) {
			t.Errorf("ParseBlockHeader(%q) = %d, %d, %v", tc.in, hdr, n, err)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	for _, s := range []string{"1.5E-06", "9.91E37", "****", "OFF", "+", "1e", "-0", "1E400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := scpi.ParseStat(s)
		if err == nil && v.OK && scpi.IsNoMeasurement(v.V) {
			t.Fatalf("ParseStat(%q) returned a no-measurement value as present", s)
		}
		_, _ = scpi.ParseCount(s)
	})
}

func FuzzParseBlockHeader(f *testing.F) {
	for _, s := range []string{"#15hello", "#0", "#9999999999", "#", "##"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		hdr, n, err := scpi.ParseBlockHeader(b)
		if err == nil && (hdr < 2 || hdr > len(b) || n < -1) {
			t.Fatalf("ParseBlockHeader(%q) = %d, %d", b, hdr, n)
		}
	})
}

func FuzzParseEvents(f *testing.F) {
	f.Add(`113,"Undefined header",0,"x"`)
	f.Add(`0,"No events to report - queue empty"`)
	f.Fuzz(func(t *testing.T, s string) { _, _ = scpi.ParseEvents(s); _, _, _ = scpi.ParseErrorEntry(s) })
}

var _ = io.EOF
var _ = strings.TrimSpace
var _ = binary.BigEndian
