//go:build unix

package faultkit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
)

// Sniffer is a UDP socket added as an extra destination of a publisher:
// it keeps copies of real datagrams for replay by a Flood. Safe for
// concurrent use.
type Sniffer struct {
	conn *net.UDPConn
	mu   sync.Mutex
	got  [][]byte
	done chan struct{}
}

// NewSniffer listens on 127.0.0.1 (ephemeral port) and keeps up to keep
// datagrams. Close it.
func NewSniffer(keep int) (*Sniffer, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("%w: sniffer: %w", ErrFault, err)
	}
	s := &Sniffer{conn: c, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 65536)
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			if len(s.got) < keep {
				s.got = append(s.got, append([]byte(nil), buf[:n]...))
			}
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// Addr is where publishers send copies.
func (s *Sniffer) Addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Captured returns the datagrams kept so far.
func (s *Sniffer) Captured() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.got...)
}

// Close stops the sniffer.
func (s *Sniffer) Close() error {
	err := s.conn.Close()
	<-s.done
	return err
}

// FloodKind is one kind of hostile datagram.
type FloodKind int

// Flood kinds. Malformed ones fail validation; Forged ones are real
// datagrams replayed from another source address.
const (
	Garbage   FloodKind = iota // random bytes, wrong magic
	Truncated                  // a real datagram cut short
	Corrupted                  // a real datagram with one body byte flipped
	Forged                     // a real datagram replayed from another socket
	numKinds
)

func (k FloodKind) String() string {
	return [...]string{"garbage", "truncated", "corrupted", "forged"}[k]
}

// Flood sends hostile datagrams to a target from its own socket (a
// source address the publisher does not use). Not safe for concurrent
// use.
type Flood struct {
	conn *net.UDPConn
	to   netip.AddrPort
	rng  *rand.Rand
	real [][]byte
	// Sent counts datagrams sent per kind.
	Sent [numKinds]uint64
}

// NewFlood returns a flood at to, seeded, replaying/mutating real.
func NewFlood(to netip.AddrPort, real [][]byte, seed uint64) (*Flood, error) {
	if len(real) == 0 {
		return nil, fmt.Errorf("%w: flood needs captured real datagrams", ErrFault)
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("%w: flood socket: %w", ErrFault, err)
	}
	return &Flood{conn: c, to: to, rng: rand.New(rand.NewPCG(seed, ^seed)), real: real}, nil
}

// Send sends n datagrams of kind k. Blocks for the sends only.
func (f *Flood) Send(ctx context.Context, k FloodKind, n int) error {
	buf := make([]byte, 0, 65536)
	for range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		src := f.real[f.rng.IntN(len(f.real))]
		switch k {
		case Garbage:
			buf = buf[:1+f.rng.IntN(1400)]
			for i := range buf {
				buf[i] = byte(f.rng.Uint32())
			}
			buf[0] = 0x00 // never the magic's first byte 'H'
		case Truncated:
			buf = append(buf[:0], src[:1+f.rng.IntN(len(src)-1)]...)
		case Corrupted:
			buf = append(buf[:0], src...)
			i := 20 + f.rng.IntN(len(buf)-20) // past the common header
			buf[i] ^= byte(1 + f.rng.IntN(255))
		case Forged:
			buf = append(buf[:0], src...)
		}
		if _, err := f.conn.WriteToUDPAddrPort(buf, f.to); err != nil {
			return fmt.Errorf("%w: flood %s: %w", ErrFault, k, err)
		}
		f.Sent[k]++
	}
	return nil
}

// Close closes the flood's socket.
func (f *Flood) Close() error { return f.conn.Close() }
