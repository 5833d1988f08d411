package scopesim_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/internal/testkit"
	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

type client struct {
	c  net.Conn
	rd *bufio.Reader
}

func connect(t *testing.T, d scopesim.Dialect, ch map[int]scopesim.EdgeSource) (*scopesim.Server, *client) {
	t.Helper()
	return connectIDN(t, d, "", ch)
}

func (c *client) query(t *testing.T, q string) string {
	t.Helper()
	c.c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c.c, q+"\n"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, "?") {
		return ""
	}
	l, err := c.rd.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.TrimRight(l, "\n")
}

// want queries q and fails the test unless the reply is exactly reply;
// note says what the reply means.
func (c *client) want(t *testing.T, q, reply, note string) {
	t.Helper()
	if got := c.query(t, q); got != reply {
		t.Fatalf("%s = %q, want %q (%s)", q, got, reply, note)
	}
}

// Tektronix answers with long headers until HEADer OFF.
func TestTekLongHeadersByDefault(t *testing.T) {
	_, c := connect(t, scopesim.Tek, nil)
	c.query(t, "MEASUrement:ADDMEAS DELAY")
	c.want(t, "MEASUrement:LIST?", ":MEASUREMENT:LIST MEAS1", "the default reply has a long header")
	c.query(t, "HEADer OFF")
	c.want(t, "MEASUrement:LIST?", "MEAS1", "short after HEADer OFF")
}

// A new Tektronix DELAY measurement's second source is its first: without
// SOUrce2 the delay is CH1 to CH1 — zero, a plausible-looking lie.
func TestTekSecondSourceDefaultsToFirst(t *testing.T) {
	c := connectPulsed(t, scopesim.Tek, 3, 100_000, func(int) int64 { return 5000 })
	c.query(t, "HEADer OFF")
	c.query(t, "MEASUrement:ADDMEAS DELAY")
	c.want(t, "MEASUrement:MEAS1:RESUlts:ALLAcqs:MEAN?", "0.0000E+00", "CH1→CH1 mean: SOUrce2 defaults to SOUrce1")
	c.query(t, "MEASUrement:MEAS1:SOUrce2 CH2")
	c.want(t, "MEASUrement:MEAS1:RESUlts:ALLAcqs:MEAN?", "5.0000E-06", "CH1→CH2 mean")
}

func TestUndefinedHeaderQueued(t *testing.T) {
	_, c := connect(t, scopesim.Keysight, nil)
	c.query(t, ":BOGus:COMMand 1")
	c.want(t, ":SYSTem:ERRor?", `-113,"Undefined header"`, "the undefined header queued")
	c.want(t, ":SYSTem:ERRor?", `+0,"No error"`, "the queue then empty")
}

func TestFaultSwitches(t *testing.T) {
	srv, c := connect(t, scopesim.Keysight, nil)
	srv.GarbageReplies(1)
	if got := c.query(t, "*IDN?"); !strings.Contains(got, "GARBAGE") {
		t.Fatalf("want garbage, got %q", got)
	}
	srv.DropReplies(1)
	io.WriteString(c.c, "*IDN?\n*OPC?\n")
	c.c.SetDeadline(time.Now().Add(3 * time.Second))
	if l, _ := c.rd.ReadString('\n'); l != "1\n" {
		t.Fatalf("after a dropped reply the next reply is %q, want the *OPC? answer", l)
	}
}

func TestMemSourceEOFAndCancel(t *testing.T) {
	m := scopesim.NewMemSource()
	m.Push(scopes.Edge{TimeNs: 5, Rising: true})
	m.Close()
	if ts, r, err := m.ReadEdge(t.Context()); err != nil || ts != 5 || !r {
		t.Fatal(ts, r, err)
	}
	if _, _, err := m.ReadEdge(t.Context()); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	m2 := scopesim.NewMemSource()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := m2.ReadEdge(ctx); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestPulseGen(t *testing.T) {
	g := scopesim.NewPulseGen(time.Millisecond, 100*time.Microsecond, 10*time.Microsecond)
	s, r := g.Sender(), g.Receiver()
	for i := range 3 {
		ts, rising, err := s.ReadEdge(t.Context())
		if err != nil || !rising {
			t.Fatal(err)
		}
		s.ReadEdge(t.Context()) // falling
		tr, rising, err := r.ReadEdge(t.Context())
		if err != nil || !rising {
			t.Fatal(err)
		}
		r.ReadEdge(t.Context())
		if d := tr - ts; d < 100_000 || d >= 110_000 {
			t.Fatalf("pulse %d delay %dns outside [100µs, 110µs)", i, d)
		}
	}
}

func TestCloseTwice(t *testing.T) {
	srv, err := scopesim.Start(t.Context(), scopesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); !errors.Is(err, scopes.ErrClosed) {
		t.Fatal(err)
	}
}

func waitEdges(t *testing.T, s *scopesim.Server, ch, n int) {
	t.Helper()
	testkit.Until(t, 5*time.Second, func() error {
		if got := s.EdgeCount(ch); got < n {
			return fmt.Errorf("channel %d has %d edges, want %d", ch, got, n)
		}
		return nil
	})
}

// connectPulsed connects to a d simulator whose CH1 and CH2 play n
// marker pulses (Pulses: from 1000 ns, every periodNs, 100 ns wide, CH2
// delay(i) ns after CH1) and returns once it has seen all 2n edges on
// each channel.
func connectPulsed(t *testing.T, d scopesim.Dialect, n int, periodNs int64, delay func(int) int64) *client {
	t.Helper()
	a, b := scopesim.NewMemSource(), scopesim.NewMemSource()
	snd, rcv := scopesim.Pulses(n, 1000, periodNs, 100, delay)
	a.Push(snd...)
	b.Push(rcv...)
	srv, c := connect(t, d, map[int]scopesim.EdgeSource{1: a, 2: b})
	waitEdges(t, srv, 1, 2*n)
	waitEdges(t, srv, 2, 2*n)
	return c
}

func connectIDN(t *testing.T, d scopesim.Dialect, idn string, ch map[int]scopesim.EdgeSource) (*scopesim.Server, *client) {
	t.Helper()
	srv, err := scopesim.Start(t.Context(), scopesim.Config{Dialect: d, IDN: idn, Channels: ch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, &client{c, bufio.NewReader(c)}
}

// As the guides say: an undefined header is not executed, queues -113 and
// a query gets no reply at all — the next reply is the next query's.
func TestUndefinedQuerySendsNothing(t *testing.T) {
	for _, d := range []scopesim.Dialect{scopesim.Keysight, scopesim.Rigol, scopesim.Siglent, scopesim.Tek} {
		t.Run(d.String(), func(t *testing.T) {
			_, c := connect(t, d, nil)
			c.query(t, "HEADer OFF") // Tek: short replies
			io.WriteString(c.c, ":BOGus:QUERy?\n")
			c.want(t, "*OPC?", "1", "the next reply after an undefined query is *OPC?'s")
			c.want(t, "*ESR?", "32", "the command-error bit")
		})
	}
}

// Each Rigol family answers only its own table: :MEASure:STATistic:MODE
// exists on the DS1000Z only, CNT and COUNt on MSO5000 and DHO only.
func TestRigolFamiliesStrict(t *testing.T) {
	for _, tc := range []struct {
		idn         string
		mode, count bool
	}{
		{"RIGOL TECHNOLOGIES,DS1054Z,DS1Z,00.04.04.SP4", true, false},
		{"RIGOL TECHNOLOGIES,MSO5074,MS5A,00.01.03", false, true},
		{"RIGOL TECHNOLOGIES,DHO924S,DHO9A,00.01.02", false, true},
	} {
		t.Run(scopes.ParseIDN(tc.idn).Model, func(t *testing.T) {
			_, c := connectIDN(t, scopesim.Rigol, tc.idn, nil)
			for _, cmd := range []struct {
				text string
				ok   bool
			}{{":MEASure:STATistic:MODE EXTRemum", tc.mode}, {":MEASure:STATistic:COUNt 500", tc.count}} {
				c.query(t, cmd.text)
				got := c.query(t, ":SYSTem:ERRor?")
				if want := map[bool]string{true: `0,"No error"`, false: `-113,"Undefined header"`}[cmd.ok]; got != want {
					t.Errorf("%s: error queue %q, want %q", cmd.text, got, want)
				}
			}
			if tc.count {
				if got := c.query(t, ":MEASure:STATistic:COUNt?"); got != "500" {
					t.Errorf("COUNt? = %q", got)
				}
			}
		})
	}
}

// MSO5000/DHO statistics roll over the last COUNt (default 1000)
// measurements: the count stops at 1000 however many acquisitions follow.
func TestRigolRollingWindow(t *testing.T) {
	c := connectPulsed(t, scopesim.Rigol, 1005, 10_000, func(i int) int64 { return int64(1000 + i) })
	c.query(t, ":MEASure:STATistic:ITEM RRDelay,CHANnel1,CHANnel2")
	c.want(t, ":MEASure:STATistic:ITEM? CNT,RRDelay,CHANnel1,CHANnel2", "1.0000E+03", "count: the default window")
	// The window holds the last 1000: delays 1005..2004 ns.
	c.want(t, ":MEASure:STATistic:ITEM? MINimum,RRDelay,CHANnel1,CHANnel2", "1.005000E-06", "min: the oldest delay inside the window")
}

// A stopped acquisition takes no new edges; RUN resumes.
func TestStoppedAcquisitionTakesNoEdges(t *testing.T) {
	a := scopesim.NewMemSource()
	srv, c := connect(t, scopesim.Tek, map[int]scopesim.EdgeSource{1: a})
	c.query(t, "HEADer OFF")
	c.query(t, "ACQuire:STATE STOP")
	c.want(t, "ACQuire:STATE?", "0", "after STOP")
	a.Push(scopes.Edge{TimeNs: 10, Rising: true})
	deadline := time.Now().Add(5 * time.Second)
	for srv.Received(1) < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	if srv.EdgeCount(1) != 0 {
		t.Fatalf("a stopped scope acquired %d edges", srv.EdgeCount(1))
	}
	c.query(t, "ACQuire:STATE RUN")
	c.query(t, "*OPC?")
	a.Push(scopes.Edge{TimeNs: 20, Rising: true})
	waitEdges(t, srv, 1, 1)
}

// Replies can leave in many small TCP writes.
func TestReplyChunks(t *testing.T) {
	srv, c := connect(t, scopesim.Keysight, nil)
	srv.SetReplyChunk(3)
	if got := c.query(t, "*IDN?"); !strings.HasPrefix(got, "KEYSIGHT TECHNOLOGIES,") {
		t.Fatalf("chunked *IDN? = %q", got)
	}
}
