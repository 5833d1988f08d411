package udp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"time"
)

// AnnounceConfig makes an endpoint send one ANNOUNCE datagram per Period to
// To (a multicast group on the socket's interface, or a unicast address).
type AnnounceConfig struct {
	To     netip.AddrPort
	Period time.Duration // default 1 s
	Topic  string        // topic name (≤ 64 bytes)
	Node   string        // node name (≤ 64 bytes)
}

func (a *AnnounceConfig) enabled() bool { return a.To.IsValid() }

func (a *AnnounceConfig) period() time.Duration {
	if a.Period <= 0 {
		return time.Second
	}
	return a.Period
}

// ListenAnnounces reads ANNOUNCE datagrams from conn and calls fn for each
// valid one until ctx is done (returns ctx.Err()) or conn fails. Invalid
// datagrams are skipped. For tools listing live endpoints; fn runs on the
// calling goroutine. Blocks; closes nothing.
func ListenAnnounces(ctx context.Context, conn Conn, fn func(from netip.AddrPort, a *Announce)) error {
	buf := make([]byte, MaxDatagram+1)
	var a Announce
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, from, _, err := conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return ErrClosed
			}
			return err
		}
		if a.UnmarshalBinary(buf[:n]) == nil {
			fn(from, &a)
		}
	}
}
