package monoclock_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/internal/monoclock"
)

// Now and WallAndMono read the kernel's CLOCK_MONOTONIC (not a per-process
// offset of it): a clock_gettime reading taken between two of ours lies
// between them.
func TestNowIsClockMonotonic(t *testing.T) {
	for range 100 {
		a := monoclock.Now()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		_, _, c := monoclock.WallAndMono()
		if k := ts.Nano(); a > k || k > c {
			t.Fatalf("Now %d, clock_gettime %d, WallAndMono %d: not ordered", a, k, c)
		}
	}
}

func TestWallAndMonoIsRealtime(t *testing.T) {
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &before); err != nil {
		t.Fatal(err)
	}
	sec, nsec, _ := monoclock.WallAndMono()
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &after); err != nil {
		t.Fatal(err)
	}
	if w := sec*1e9 + int64(nsec); w < before.Nano() || w > after.Nano() {
		t.Fatalf("WallAndMono wall %d outside clock_gettime(REALTIME) [%d, %d]", w, before.Nano(), after.Nano())
	}
}

func TestNowDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = monoclock.Now(); _, _, _ = monoclock.WallAndMono() }); n != 0 {
		t.Fatalf("%v allocs per call", n)
	}
}
