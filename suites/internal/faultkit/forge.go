//go:build unix

package faultkit

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// FragmentFlood forges DATA first fragments of large messages under
// made-up writer epochs (valid header and CRC32C, docs/udp.md "Datagram
// layout") at a subscriber: the attack of issue 14 item 1, which used to
// take a reliable subscriber's reassembly pool. Each made-up epoch sends
// the first fragments of messages 1..perEpoch (a reliable stream holds a
// slot for each until the message completes, which it never does), then
// the next epoch takes over. It is built by hand from
// the documented wire format (suites do not import the middleware's
// internals). Not safe for concurrent use.
type FragmentFlood struct {
	conn   *net.UDPConn
	to     netip.AddrPort
	topic  uint32
	msgLen int
	frag   int
	per    uint64
	epoch  uint32
	rng    *rand.Rand
	buf    []byte
	// Sent counts forged datagrams sent.
	Sent uint64
}

// NewFragmentFlood forges first fragments of maxPayload-byte messages of
// topic, perEpoch under each made-up epoch, sent to `to` from its own
// loopback socket. Close it.
func NewFragmentFlood(to netip.AddrPort, topic string, maxPayload, perEpoch int, seed uint64) (*FragmentFlood, error) {
	if perEpoch < 1 {
		return nil, fmt.Errorf("%w: fragment flood: %d messages per epoch, want >= 1", ErrFault, perEpoch)
	}
	frag := max(256, maxPayload/16)
	if maxPayload <= frag {
		return nil, fmt.Errorf("%w: fragment flood: max payload %d B leaves no room for a multi-fragment message", ErrFault, maxPayload)
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("%w: fragment flood socket: %w", ErrFault, err)
	}
	return &FragmentFlood{conn: c, to: to, topic: middleware.TopicID(topic), msgLen: maxPayload, frag: frag, per: uint64(perEpoch),
		rng: rand.New(rand.NewPCG(seed, ^seed)), buf: make([]byte, dataHeaderLen+frag)}, nil
}

// Wire constants of a DATA datagram (docs/udp.md).
const (
	wireMagic     = 0x484C5255
	dataHeaderLen = 68
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// forge writes the next first fragment.
func (f *FragmentFlood) forge() []byte {
	if f.Sent%f.per == 0 {
		f.epoch = f.rng.Uint32() | 1 // a made-up epoch
	}
	b := f.buf
	be := binary.BigEndian
	n := len(b)
	clear(b[:dataHeaderLen])
	be.PutUint32(b[0:], wireMagic)
	b[4], b[5] = 1, 1 // wire version 1, DATA
	be.PutUint16(b[6:], uint16(n))
	be.PutUint32(b[8:], f.topic)
	be.PutUint32(b[12:], f.epoch)
	be.PutUint64(b[20:], 1+f.Sent%f.per) // seq
	be.PutUint64(b[28:], uint64(time.Now().UnixNano()))
	b[48] = 1                              // header version
	be.PutUint32(b[52:], uint32(f.msgLen)) // message length
	be.PutUint32(b[56:], uint32(f.frag))   // fragment size
	be.PutUint32(b[60:], 0)                // first fragment
	be.PutUint32(b[64:], uint32((f.msgLen+f.frag-1)/f.frag))
	c := crc32.Update(0, castagnoli, b[:16])
	be.PutUint32(b[16:], crc32.Update(c, castagnoli, b[20:n]))
	return b
}

// Run sends forged fragments at rate datagrams/s (paced in 1 ms steps)
// until ctx is done, then returns the achieved rate (datagrams/s over the
// time it ran). Blocks.
func (f *FragmentFlood) Run(ctx context.Context, rate float64) (float64, error) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var due float64
	for {
		select {
		case <-ctx.Done():
			return float64(f.Sent) / time.Since(start).Seconds(), nil
		case <-tick.C:
		}
		// Catch up to the rate over the elapsed time, not per tick: a late
		// tick (a busy host) sends its share on the next one.
		// At most 20 ms worth at once, so a long stall does not turn into
		// one burst that overflows the socket buffer.
		due = min(rate*time.Since(start).Seconds()-float64(f.Sent), rate/50)
		for ; due >= 1; due-- {
			if _, err := f.conn.WriteToUDPAddrPort(f.forge(), f.to); err != nil {
				return 0, fmt.Errorf("%w: fragment flood to %s: %w", ErrFault, f.to, err)
			}
			f.Sent++
		}
	}
}

// Close closes the flood's socket.
func (f *FragmentFlood) Close() error { return f.conn.Close() }
