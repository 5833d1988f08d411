package udp

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// FaultConfig describes the faults FaultConn injects on the write side.
// Rates are probabilities in [0,1] drawn from a PCG seeded with Seed, one
// draw sequence per datagram in write order, so a single writer sees the
// same faults on every run.
type FaultConfig struct {
	Seed      uint64
	Drop      float64 // datagram silently discarded
	Duplicate float64 // datagram sent twice
	// Reorder: datagram held back and sent after the next datagram of a
	// faulted kind (see Kinds), so which datagrams overtake which depends
	// on the seed alone, never on when an unfaulted one (a heartbeat from a
	// timer) happened to pass. A datagram held when none follows is sent by
	// SetEnabled(false) and lost at Close.
	Reorder   float64
	DelayRate float64       // datagram sent Delay later
	Delay     time.Duration // delay applied to delayed datagrams
	// Kinds restricts faults to these datagram kinds (bitmask 1<<Kind);
	// 0 means all kinds. Datagrams of other kinds pass untouched and consume
	// no random draws.
	Kinds uint32
}

// KindMask returns the FaultConfig.Kinds mask for ks.
func KindMask(ks ...Kind) uint32 {
	var m uint32
	for _, k := range ks {
		m |= 1 << k
	}
	return m
}

// FaultStats counts what FaultConn did.
type FaultStats struct {
	Seen, Dropped, Duplicated, Reordered, Delayed uint64
	// DroppedSeqs counts the distinct DATA/BATCH messages of which at
	// least one datagram was dropped (for exact loss assertions with
	// single-fragment messages it equals Dropped of those kinds).
	DroppedData uint64
}

// FaultConn wraps a Conn and injects seeded faults into WriteTo. Reads pass
// through. It copies held datagrams (allocates): a test tool, not a hot
// path. Safe for concurrent use.
type FaultConn struct {
	Conn
	dc      directConn // Conn's direct read, nil if none
	mu      sync.Mutex
	cfg     FaultConfig
	rng     *rand.Rand
	held    []byte
	heldTo  netip.AddrPort
	hasHeld bool
	on      bool
	stats   FaultStats
	wg      sync.WaitGroup
}

var _ Conn = (*FaultConn)(nil)

// NewFaultConn wraps c. Faults are enabled.
func NewFaultConn(c Conn, cfg FaultConfig) *FaultConn {
	f := &FaultConn{Conn: c, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), on: true}
	f.dc, _ = c.(directConn)
	return f
}

// ReadDirect is the underlying Conn's direct read (reads are never
// faulted), so a Sender or Receiver on a FaultConn reads the way it does
// in production. Only used when the underlying Conn has one (asDirect).
func (f *FaultConn) ReadDirect(b []byte, wait time.Duration) (int, netip.AddrPort, int64, error) {
	return f.dc.ReadDirect(b, wait)
}

// asDirect returns c's direct read, or nil when c has none (a FaultConn
// over a Conn without one included).
func asDirect(c Conn) directConn {
	if f, ok := c.(*FaultConn); ok {
		if f.dc == nil {
			return nil
		}
		return f
	}
	d, _ := c.(directConn)
	return d
}

// SetEnabled turns fault injection on or off (a held datagram is flushed
// when turning off).
func (f *FaultConn) SetEnabled(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = on
	if !on && f.hasHeld {
		f.hasHeld = false
		_ = f.Conn.WriteTo(f.held, f.heldTo)
	}
}

// Stats returns the counters so far.
func (f *FaultConn) Stats() FaultStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// WriteTo applies the faults to one datagram.
func (f *FaultConn) WriteTo(b []byte, to netip.AddrPort) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on || len(b) < CommonLen || (f.cfg.Kinds != 0 && f.cfg.Kinds&(1<<(b[5]&31)) == 0) {
		// Unfaulted: passes, and a held datagram stays held (off, nothing
		// is: SetEnabled released it).
		return f.Conn.WriteTo(b, to)
	}
	f.stats.Seen++
	drop := f.rng.Float64() < f.cfg.Drop
	dup := f.rng.Float64() < f.cfg.Duplicate
	reorder := f.rng.Float64() < f.cfg.Reorder
	delay := f.rng.Float64() < f.cfg.DelayRate
	if drop {
		f.stats.Dropped++
		if Kind(b[5]) == KindData || Kind(b[5]) == KindBatch {
			f.stats.DroppedData++
		}
		return nil
	}
	if delay && f.cfg.Delay > 0 {
		f.stats.Delayed++
		cp := append([]byte(nil), b...)
		f.wg.Add(1)
		time.AfterFunc(f.cfg.Delay, func() {
			defer f.wg.Done()
			_ = f.Conn.WriteTo(cp, to)
		})
		return nil
	}
	if reorder && !f.hasHeld {
		f.stats.Reordered++
		f.held = append(f.held[:0], b...)
		f.heldTo, f.hasHeld = to, true
		return nil
	}
	err := f.Conn.WriteTo(b, to)
	if dup {
		f.stats.Duplicated++
		_ = f.Conn.WriteTo(b, to)
	}
	if f.hasHeld {
		f.hasHeld = false
		_ = f.Conn.WriteTo(f.held, f.heldTo)
	}
	return err
}

// Close flushes nothing held (held datagrams are lost as on a dying link),
// waits for delayed sends and closes the underlying Conn.
func (f *FaultConn) Close() error {
	f.wg.Wait()
	return f.Conn.Close()
}
