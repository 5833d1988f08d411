package hostinfo_test

import (
	"runtime"
	"testing"

	"github.com/hilrig/hilrig/hostinfo"
)

var retained [][]byte

// GoHeapLive follows memory the program still references across a GC and
// drops again once it is released: the property the fan-out leak check
// relies on. Reading it allocates nothing, so agents can call it every
// window.
func TestGoHeapLiveTracksRetainedMemory(t *testing.T) {
	const chunk, n = 1 << 20, 16
	runtime.GC()
	base := hostinfo.GoHeapLive()
	if base <= 0 {
		t.Fatalf("GoHeapLive after a GC = %d, want > 0", base)
	}
	for range n {
		retained = append(retained, make([]byte, chunk))
	}
	runtime.GC()
	held := hostinfo.GoHeapLive()
	// Absolute, not a difference: other tests' data in base may be gone.
	if held < n*chunk {
		t.Fatalf("live heap %d bytes while %d were retained (base %d)", held, n*chunk, base)
	}
	retained = nil
	runtime.GC()
	if after := hostinfo.GoHeapLive(); after >= held-n*chunk/2 {
		t.Fatalf("live heap %d after releasing %d bytes, was %d", after, n*chunk, held)
	}
	if a := testing.AllocsPerRun(100, func() { _ = hostinfo.GoHeapLive() }); a != 0 {
		t.Fatalf("GoHeapLive allocates %.1f times per call", a)
	}
}

// GoHeapAllocs counts what was allocated, kept or not, and never goes
// back; reading it allocates nothing.
func TestGoHeapAllocsCounts(t *testing.T) {
	const chunk = 4 << 20
	before := hostinfo.GoHeapAllocs()
	sink = make([]byte, chunk)
	sink = nil
	runtime.GC()
	if d := hostinfo.GoHeapAllocs() - before; d < chunk {
		t.Fatalf("allocated %d bytes, GoHeapAllocs grew by %d", chunk, d)
	}
	if a := testing.AllocsPerRun(100, func() { _ = hostinfo.GoHeapAllocs() }); a != 0 {
		t.Fatalf("GoHeapAllocs allocates %.1f times per call", a)
	}
}

var sink []byte
