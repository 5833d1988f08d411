package bench

import (
	"context"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hilrig/hilrig/bench/internal/sys"
)

// The raw baselines: two ends exchanging a sequence number through two
// 32-bit words on separate cache lines of one MAP_SHARED mapping, plus two
// payload areas. The ping end copies its payload into area A and stores the
// sequence into word A; the pong end waits for word A, copies area A into
// area B (the same bytes a middleware copy-path pong moves: slot to slot)
// and stores the sequence into word B. raw-spin waits by polling the word,
// raw-futex by FUTEX_WAIT with an unconditional FUTEX_WAKE after each store
// (the classic C sleep/wake ping-pong).
//
// Layout of the mapping (offsets in bytes):
//
//	0     word A (ping -> pong), uint32, written with a release store
//	128   word B (pong -> ping), uint32; 128 keeps the adjacent-line
//	      prefetcher from pairing the two lines
//	4096  area A, size bytes, then area B at 4096+roundUp(size, 4096)
type rawShared struct {
	mem          []byte
	a, b         *sys.Futex
	areaA, areaB []byte
}

// spinYieldMask: a spinner yields its CPU once every 2^18 polls (roughly
// 0.5 ms). A healthy run never gets there; on an oversubscribed machine
// (the other end descheduled onto our CPU) it turns a stall of a whole
// scheduler slice into a short one.
const spinYieldMask = 1<<18 - 1

const rawWaitSlice = 100 * time.Millisecond // futex timeout: how often a sleeper checks stop

func rawMapSize(size int) int { return 4096 + 2*roundUp(size, 4096) }

func roundUp(n, to int) int { return (n + to - 1) / to * to }

func newRawShared(mem []byte, size int) *rawShared {
	off := 4096 + roundUp(size, 4096)
	return &rawShared{
		mem:   mem,
		a:     sys.NewFutex((*uint32)(unsafe.Pointer(&mem[0])), rawWaitSlice),
		b:     sys.NewFutex((*uint32)(unsafe.Pointer(&mem[128])), rawWaitSlice),
		areaA: mem[4096 : 4096+size],
		areaB: mem[off : off+size],
	}
}

// openRawShared creates the unlinked /dev/shm file and maps it.
func openRawShared(size int) (*os.File, *rawShared, error) {
	f, err := sys.ShmFile("/dev/shm", rawMapSize(size))
	if err != nil {
		return nil, nil, err
	}
	mem, err := sys.Map(f, rawMapSize(size))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, newRawShared(mem, size), nil
}

func (r *rawShared) close() error { return sys.Unmap(r.mem) }

// waitWord waits until w holds want (spin or futex), checking stop.
// 0 allocs.
func waitWord(w *sys.Futex, want uint32, futex bool, stop *atomic.Bool) error {
	if !futex {
		for i := 1; w.Load() != want; i++ {
			if stop.Load() {
				return ErrStalled
			}
			if i&spinYieldMask == 0 {
				sys.Yield()
			}
		}
		return nil
	}
	for {
		v := w.Load()
		if v == want {
			return nil
		}
		if stop.Load() {
			return ErrStalled
		}
		if err := w.Wait(v); err != nil && err != sys.ErrTimeout {
			return err
		}
	}
}

type rawPing struct {
	sh    *rawShared
	futex bool
	buf   []byte
	stop  *atomic.Bool
}

func (p *rawPing) handshake(context.Context) error { return nil }

func (p *rawPing) roundTrip(seq uint64) error {
	copy(p.sh.areaA, p.buf)
	s := uint32(seq)
	p.sh.a.Store(s)
	if p.futex {
		if err := p.sh.a.Wake(1); err != nil {
			return err
		}
	}
	return waitWord(p.sh.b, s, p.futex, p.stop)
}

func (p *rawPing) close() error { return p.sh.close() }

type rawPong struct {
	sh       *rawShared
	futex    bool
	last     uint32
	borrowed bool // the mapping belongs to the in-process ping end
}

// serve answers until stop. A pong waiting for a word that never changes
// (spin) notices stop within one poll; a futex sleeper within rawWaitSlice.
func (p *rawPong) serve(_ context.Context, stop *atomic.Bool) (uint64, error) {
	var n uint64
	for !stop.Load() {
		var s uint32
		if p.futex {
			for {
				s = p.sh.a.Load()
				if s != p.last || stop.Load() {
					break
				}
				if err := p.sh.a.Wait(s); err != nil && err != sys.ErrTimeout {
					return n, err
				}
			}
		} else {
			for i := 1; ; i++ {
				s = p.sh.a.Load()
				if s != p.last || stop.Load() {
					break
				}
				if i&spinYieldMask == 0 {
					sys.Yield()
				}
			}
		}
		if s == p.last {
			break
		}
		p.last = s
		copy(p.sh.areaB, p.sh.areaA)
		p.sh.b.Store(s)
		if p.futex {
			if err := p.sh.b.Wake(1); err != nil {
				return n, err
			}
		}
		n++
	}
	return n, nil
}

func (p *rawPong) close() error {
	if p.borrowed {
		return nil
	}
	return p.sh.close()
}

// chanPing/chanPong: the in-process sleeping baseline, two goroutines
// passing the sequence number over unbuffered channels (what idiomatic Go
// would do without a middleware). Payload is copied between two buffers to
// match the copy path.
type chanLink struct {
	req, resp chan uint64
	a, b      []byte
}

type chanPing struct {
	l    *chanLink
	buf  []byte
	stop *atomic.Bool
	done <-chan struct{}
}

func (p *chanPing) handshake(context.Context) error { return nil }

func (p *chanPing) roundTrip(seq uint64) error {
	copy(p.l.a, p.buf)
	select {
	case p.l.req <- seq:
	case <-p.done:
		return ErrStalled
	}
	select {
	case <-p.l.resp:
		return nil
	case <-p.done:
		return ErrStalled
	}
}

func (p *chanPing) close() error { return nil }

type chanPong struct{ l *chanLink }

func (p *chanPong) serve(ctx context.Context, _ *atomic.Bool) (uint64, error) {
	var n uint64
	for {
		select {
		case s := <-p.l.req:
			copy(p.l.b, p.l.a)
			select {
			case p.l.resp <- s:
			case <-ctx.Done():
				return n, nil
			}
			n++
		case <-ctx.Done():
			return n, nil
		}
	}
}

func (p *chanPong) close() error { return nil }
