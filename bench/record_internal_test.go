package bench

import (
	"testing"
	"time"
)

// TestRecordAtAllocs: keeping --record's stamps costs the timed loop no
// allocation; past the room keep made, stamps are dropped, not grown.
func TestRecordAtAllocs(t *testing.T) {
	h := newHist()
	h.keep(200)
	t0 := time.Now()
	if a := testing.AllocsPerRun(100, func() { h.recordAt(t0, time.Microsecond) }); a != 0 {
		t.Fatalf("recordAt: %v allocs, want 0", a)
	}
	if len(h.stamps) != 101 || cap(h.stamps) != 200 || h.stamps[0].rttNs != 1000 {
		t.Fatalf("%d stamps in %d, first %+v", len(h.stamps), cap(h.stamps), h.stamps[0])
	}
	for range 200 {
		h.recordAt(t0, time.Microsecond)
	}
	if len(h.stamps) != 200 || cap(h.stamps) != 200 {
		t.Fatalf("%d stamps in %d, want 200 in 200", len(h.stamps), cap(h.stamps))
	}
}
