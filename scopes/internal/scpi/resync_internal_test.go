package scpi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
)

// fate is what happens to one reply of the simulated instrument.
type fate int

const (
	onTime  fate = iota
	late         // released after a few more client I/O events
	dropped      // never sent
	garbled      // sent with binary junk around it
)

// logicalInst is an in-order SCPI instrument on a logical clock, under
// [Conn] as its transport: every client read or write is one tick; a read
// that finds nothing released is a timeout at once. Replies leave in
// command order (a late reply holds back every reply behind it, as on a
// real instrument), each in 1–7 byte pieces (a block arriving in many
// small TCP writes).
type logicalInst struct {
	rng    *rand.Rand
	now    int
	out    []byte    // released, not yet read
	queue  []pending // produced, not yet released (in order)
	lastAt int
	ese    int
	faults bool
	rates  [4]int // per-mille chance of each fate when faults are on
}

type pending struct {
	at   int
	data []byte
}

// value is the statistic the instrument answers for query q: unique per
// query, never "1" or a small integer a marker or *OPC? would send.
func value(q string) string { return fmt.Sprintf("%s=%d.25E-06", strings.TrimSuffix(q, "?"), len(q)) }

func (f *logicalInst) tick() {
	f.now++
	for len(f.queue) > 0 && f.queue[0].at <= f.now {
		f.out = append(f.out, f.queue[0].data...)
		f.queue = f.queue[1:]
	}
}

func (f *logicalInst) reply(s string) {
	fa := onTime
	if f.faults {
		r := f.rng.IntN(1000)
		switch {
		case r < f.rates[late]:
			fa = late
		case r < f.rates[late]+f.rates[dropped]:
			fa = dropped
		case r < f.rates[late]+f.rates[dropped]+f.rates[garbled]:
			fa = garbled
		}
	}
	at := f.now
	switch fa {
	case dropped:
		return
	case late:
		at += 1 + f.rng.IntN(12)
	case garbled:
		s = "\x00\xff" + s + "\x1b"
	}
	if at < f.lastAt {
		at = f.lastAt // in order
	}
	f.lastAt = at
	f.queue = append(f.queue, pending{at, []byte(s + "\n")})
}

func (f *logicalInst) write(p []byte, _ time.Time) error {
	f.tick()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		h, arg, _ := strings.Cut(line, " ")
		switch {
		case h == "*CLS":
		case h == "*OPC?":
			f.reply("1")
		case h == "*ESE?":
			f.reply(strconv.Itoa(f.ese))
		case h == "*ESE":
			f.ese, _ = strconv.Atoi(arg)
		case strings.HasSuffix(h, "?"):
			f.reply(value(h))
		}
	}
	f.tick()
	return nil
}

func (f *logicalInst) read(p []byte, _ time.Time) (int, bool, error) {
	f.tick()
	if len(f.out) == 0 {
		return 0, false, os.ErrDeadlineExceeded
	}
	n := min(len(p), len(f.out), 1+f.rng.IntN(7))
	copy(p, f.out[:n])
	f.out = f.out[n:]
	return n, false, nil
}

func (f *logicalInst) clear(time.Time) error { return nil }
func (f *logicalInst) interrupt()            {}
func (f *logicalInst) close() error          { return nil }

// Over random schedules of late, dropped and garbled replies, a query that
// succeeds returns its own statistic — never another query's value, a
// marker, or an *OPC? "1" — and once the faults stop the connection
// answers correctly again. On the *OPC? resync this failed: after a late
// reply and two timeouts, the second "1" stayed buffered and became the
// next query's answer, shifting every later one.
func TestResyncNeverShiftsReplies(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		inst := &logicalInst{rng: rng, faults: true,
			rates: [4]int{late: 50 + rng.IntN(250), dropped: rng.IntN(120), garbled: rng.IntN(120)}}
		c := newConn(inst, "sim", Options{Timeout: time.Hour, DrainQuiet: time.Hour})
		ok := 0
		for i := range 60 {
			q := fmt.Sprintf("MEAS%d:STAT%d?", seed, i)
			got, err := c.Query(t.Context(), q)
			if err != nil {
				if !errors.Is(err, scopes.ErrTimeout) && !errors.Is(err, scopes.ErrGarbage) {
					t.Fatalf("seed %d query %d: unexpected error %v", seed, i, err)
				}
				continue
			}
			if got != value(q) {
				t.Fatalf("seed %d: %s answered %q, want %q — a reply was attributed to the wrong query (after %d resyncs)",
					seed, q, got, value(q), c.Resyncs())
			}
			ok++
		}
		// Faults stop: a bounded number of attempts must bring the
		// connection back (the first may still meet replies in flight).
		inst.faults = false
		recovered := false
		for attempt := range 3 {
			q := fmt.Sprintf("FINAL%d:%d?", seed, attempt)
			got, err := c.Query(t.Context(), q)
			if err == nil {
				if got != value(q) {
					t.Fatalf("seed %d: after the faults %s answered %q, want %q", seed, q, got, value(q))
				}
				recovered = true
				break
			}
		}
		if !recovered {
			t.Fatalf("seed %d: connection did not recover within 3 queries once the faults stopped", seed)
		}
		if ok == 0 {
			t.Logf("seed %d: no query succeeded under faults (rates %v)", seed, inst.rates)
		}
	}
}

// The resync restores the user's *ESE mask and leaves no marker byte
// behind.
func TestResyncRestoresESE(t *testing.T) {
	inst := &logicalInst{rng: rand.New(rand.NewPCG(1, 2)), ese: 36}
	c := newConn(inst, "sim", Options{Timeout: time.Hour, DrainQuiet: time.Hour})
	if err := c.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if inst.ese != 36 {
		t.Fatalf("*ESE = %d after resync, want the user's 36", inst.ese)
	}
	if len(c.buf) != 0 || len(inst.out) != 0 || len(inst.queue) != 0 {
		t.Fatalf("bytes left behind the marker: buf %q out %q", c.buf, inst.out)
	}
}
