package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/hilrig/hilrig/bench/internal/sys"
)

// The socket baselines use blocking read(2)/write(2) on the OS thread (as a
// C ping-pong would), not Go's netpoller, with a short SO_RCVTIMEO so a
// blocked reader notices stop.

// errShort is returned when a stream peer closed mid-message.
var errShort = fmt.Errorf("%w: connection closed mid-message", ErrPeer)

// fdConn is a blocking socket fd.
type fdConn struct {
	f  *os.File
	fd int
}

func newFdConn(f *os.File) *fdConn { return &fdConn{f: f, fd: int(f.Fd())} }

// readFull reads exactly len(b) bytes from a stream. 0 allocs.
func (c *fdConn) readFull(b []byte, stop *atomic.Bool) error {
	for got := 0; got < len(b); {
		n, err := sys.Read(c.fd, b[got:])
		if err == sys.ErrTimeout {
			if stop.Load() {
				return ErrStalled
			}
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			if got == 0 {
				return io.EOF
			}
			return errShort
		}
		got += n
	}
	return nil
}

func (c *fdConn) writeFull(b []byte) error {
	for len(b) > 0 {
		n, err := sys.Write(c.fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

type udsPing struct {
	c    *fdConn
	buf  []byte
	rbuf []byte
	stop *atomic.Bool
}

func (p *udsPing) handshake(context.Context) error { return nil }

func (p *udsPing) roundTrip(seq uint64) error {
	binary.LittleEndian.PutUint64(p.buf, seq)
	if err := p.c.writeFull(p.buf); err != nil {
		return err
	}
	if err := p.c.readFull(p.rbuf, p.stop); err != nil {
		return err
	}
	if binary.LittleEndian.Uint64(p.rbuf) != seq {
		return errOrder
	}
	return nil
}

func (p *udsPing) close() error { return p.c.f.Close() }

type udsPong struct {
	c    *fdConn
	rbuf []byte
}

func (p *udsPong) serve(_ context.Context, stop *atomic.Bool) (uint64, error) {
	var n uint64
	for {
		if err := p.c.readFull(p.rbuf, stop); err != nil {
			if err == io.EOF || err == ErrStalled {
				return n, nil
			}
			return n, err
		}
		if err := p.c.writeFull(p.rbuf); err != nil {
			return n, err
		}
		n++
	}
}

func (p *udsPong) close() error { return p.c.f.Close() }

// errOrder is returned when a reply carries another sequence number than
// the request (a protocol bug or a stale datagram).
var errOrder = fmt.Errorf("%w: reply out of order", ErrPeer)

// errUDPLoss is returned when a raw-udp message did not arrive whole.
var errUDPLoss = fmt.Errorf("%w: raw-udp datagram lost (plain UDP does not retransmit)", ErrStalled)

// udpLossTimeouts is how many receive timeouts of silence in the middle
// of a message udpMsg.recv takes for loss.
const udpLossTimeouts = 10

// udpMsg sends and receives one message of len(buf) bytes as datagrams of
// at most dgram bytes over a connected socket. With gso (both ends), the
// datagrams go out in runs, one WriteSegs per run of at most run bytes,
// and the receiving socket has UDP_GRO, so a run that arrives still
// segmented is read whole: what hilrig's udp does (docs/udp.md,
// "Sockets"), so the baseline is plain UDP at its best, not one system
// call per datagram. The datagrams on the wire are the same either way.
type udpMsg struct {
	s     *sys.UDPSocket
	dgram int
	gso   bool
}

// newUDPMsg sets up one end; gso turns on the receiving side's UDP_GRO.
func newUDPMsg(s *sys.UDPSocket, dgram int, gso bool) (*udpMsg, error) {
	u := &udpMsg{s: s, dgram: dgram, gso: gso && dgram <= 65507/2}
	if u.gso {
		if err := s.EnableGRO(); err != nil {
			return nil, fmt.Errorf("raw-udp with GSO/GRO: %w (run with --raw-gso=false)", err)
		}
	}
	return u, nil
}

// run is the most bytes one call sends or one read takes: a whole run of
// datagrams with gso, else one datagram.
func (u *udpMsg) run() int {
	if !u.gso {
		return u.dgram
	}
	return min(sys.MaxSegs, 65507/u.dgram) * u.dgram
}

func (u *udpMsg) send(b []byte) error {
	step := u.run()
	for off := 0; off < len(b); off += step {
		end := min(off+step, len(b))
		var err error
		if end-off > u.dgram {
			_, err = u.s.WriteSegs(b[off:end], u.dgram)
		} else {
			_, err = u.s.Write(b[off:end])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recv fills b from consecutive datagrams. A receive timeout with stop set
// is ErrStalled; a timeout in the middle of a message is loss.
// Loss is declared after udpLossTimeouts receive timeouts (2 s) of silence
// in the middle of a message: a loaded shared machine can stall a process
// for a good fraction of a second without anything being lost.
func (u *udpMsg) recv(b []byte, stop *atomic.Bool) error {
	idle := 0
	room := u.dgram
	if u.gso {
		room = 1 << 16 // a GRO read must have room for whatever arrived coalesced
	}
	for got := 0; got < len(b); {
		n, err := u.s.Read(b[got:min(got+room, len(b))])
		if err == sys.ErrTimeout {
			if stop.Load() {
				return ErrStalled
			}
			if idle++; got > 0 && idle >= udpLossTimeouts {
				return errUDPLoss
			}
			continue
		}
		idle = 0
		if err != nil {
			return err
		}
		got += n
	}
	return nil
}

type rawUDPPing struct {
	u    *udpMsg
	buf  []byte
	rbuf []byte
	stop *atomic.Bool
}

func (p *rawUDPPing) handshake(context.Context) error { return nil }

func (p *rawUDPPing) roundTrip(seq uint64) error {
	binary.LittleEndian.PutUint64(p.buf, seq)
	if err := p.u.send(p.buf); err != nil {
		return err
	}
	if err := p.u.recv(p.rbuf, p.stop); err != nil {
		return err
	}
	if binary.LittleEndian.Uint64(p.rbuf) != seq {
		return errOrder
	}
	return nil
}

func (p *rawUDPPing) close() error { return p.u.s.Close() }

type rawUDPPong struct {
	u    *udpMsg
	rbuf []byte
}

func (p *rawUDPPong) serve(_ context.Context, stop *atomic.Bool) (uint64, error) {
	var n uint64
	for {
		if err := p.u.recv(p.rbuf, stop); err != nil {
			if err == ErrStalled {
				return n, nil
			}
			return n, err
		}
		if err := p.u.send(p.rbuf); err != nil {
			return n, err
		}
		n++
	}
}

func (p *rawUDPPong) close() error { return p.u.s.Close() }
