package bench

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/hilrig/hilrig/bench/internal/sys"
	"github.com/hilrig/hilrig/internal/kind"
)

// TestTimedLoopAllocs: the measured loop (round trip + histogram record)
// allocates nothing. testing.AllocsPerRun sets GOMAXPROCS to 1, under
// which two spinning goroutines of one process can only alternate by
// preemption (10 ms per turn), so in-process spinners (raw-spin-intra,
// intra/spin) are checked with a MemStats delta instead.
func TestTimedLoopAllocs(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := Launcher{Exe: exe}
	for _, e := range []endSpec{
		{transport: TRawSpin, size: 64},
		{transport: TRawFutex, size: 64},
		{transport: TUDS, size: 64},
		{transport: TRawUDP, size: 64, dgram: 1472},
		{transport: TRawUDP, size: 16 << 10, dgram: 1472, rawGSO: true}, // runs and coalesced reads
		{transport: TChan, size: 64},
		{transport: TRawSpinIntra, size: 64},
		{transport: TShm, wait: kind.WaitSpin, path: "copy", size: 64},
		{transport: TShm, wait: kind.WaitFutex, path: "loan", size: 64},
		{transport: TIntra, wait: kind.WaitSpin, path: "copy", size: 64},
		{transport: TIntra, wait: kind.WaitFutex, path: "loan", size: 64},
		{transport: TUDP, wait: kind.WaitFutex, path: "copy", size: 64},
	} {
		t.Run(e.transport+"/"+e.wait.String()+"/"+e.path+"/"+FormatSize(e.size), func(t *testing.T) {
			e.launcher, e.pingCPU, e.pongCPU = l, -1, -1
			if runtime.NumCPU() >= 2 {
				e.pingCPU, e.pongCPU = 0, 1 // spinners must not share a CPU
			}
			s, err := openSession(context.Background(), e)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.close(); err != nil {
					t.Error(err)
				}
			}()
			pin, err := sys.PinThread(e.pingCPU)
			if err != nil {
				t.Fatal(err)
			}
			defer pin.Release()
			h := newHist()
			var seq uint64
			if err := timedLoop(s.ping, 10, 10, h, &seq); err != nil {
				t.Fatal(err)
			}
			var allocs float64
			if inProcess(e.transport) && (e.wait == kind.WaitSpin || e.transport == TRawSpinIntra) {
				var a, b runtime.MemStats
				runtime.ReadMemStats(&a)
				err = timedLoop(s.ping, 500, 0, h, &seq)
				runtime.ReadMemStats(&b)
				allocs = float64(b.Mallocs - a.Mallocs)
			} else {
				allocs = testing.AllocsPerRun(50, func() {
					if err := timedLoop(s.ping, 5, 0, h, &seq); err != nil {
						t.Fatal(err)
					}
				})
			}
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Fatalf("timed loop: %v allocs, want 0", allocs)
			}
		})
	}
}
