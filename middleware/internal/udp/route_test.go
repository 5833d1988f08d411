package udp_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// dialer opens connected sockets for SenderConfig.Dial on loopback and
// remembers their addresses.
type dialer struct {
	mu    sync.Mutex
	local []netip.AddrPort
}

func (d *dialer) dial(to netip.AddrPort) (udp.Conn, error) {
	s, err := udp.Open(udp.SocketConfig{Listen: netip.AddrPortFrom(lo, 0), Connect: to})
	if err == nil {
		d.mu.Lock()
		d.local = append(d.local, s.LocalAddr())
		d.mu.Unlock()
		return s, nil
	}
	return nil, err
}

func (d *dialer) addrs() []netip.AddrPort {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]netip.AddrPort(nil), d.local...)
}

// TestConnectedRouteCarriesTheStream: a best-effort sender with Dial sends
// to its unicast peer from a socket connected to it (the datagrams' source
// is that socket, not the shared one), the peer's challenge arrives on that
// socket and is answered from it, so the receiver confirms the writer and
// delivers; the send through the route allocates nothing. A reliable or
// batching sender keeps the shared socket.
func TestConnectedRouteCarriesTheStream(t *testing.T) {
	t.Run("source", func(t *testing.T) {
		sink := openSock(t, lo)
		t.Cleanup(func() { sink.Close() })
		main := openSock(t, lo)
		var d dialer
		snd, err := udp.NewSender(main, udp.SenderConfig{TopicID: 7, MaxPayload: 64, Peers: []netip.AddrPort{sink.LocalAddr()}, Dial: d.dial})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snd.Close() })
		if err := snd.Send([]byte("routed")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, udp.MaxDatagram)
		if err := sink.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		_, from, _, err := sink.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if a := d.addrs(); len(a) != 1 || from != a[0] || from == main.LocalAddr() {
			t.Fatalf("DATA came from %s; want the connected socket (dialled: %v), not the shared %s", from, a, main.LocalAddr())
		}
	})
	t.Run("delivery", func(t *testing.T) {
		var d dialer
		r := newRig(t, udp.SenderConfig{TopicID: 8, MaxPayload: 64, HeartbeatPeriod: time.Hour, Dial: d.dial},
			udp.ReceiverConfig{TopicID: 8, MaxPayload: 64}, nil)
		p := make([]byte, 16)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var got uint64
		fn := func(m *udp.Delivery) { got = m.Seq }
		// The first message waits in the receiver until the challenge,
		// sent to the route's address, is echoed from it.
		if err := r.snd.Send(p); err != nil {
			t.Fatal(err)
		}
		if err := r.rcv.Next(ctx, fn); err != nil || got != 1 {
			t.Fatalf("first message: seq %d, err %v", got, err)
		}
		if st, rs := r.snd.Stats(), r.rcv.Stats(); len(d.addrs()) != 1 || st.Echoes == 0 || rs.Confirmed != 1 || rs.Forged != 0 {
			t.Fatalf("routes %v, echoes %d, receiver confirmed %d forged %d: want 1 route that answered the challenge", d.addrs(), st.Echoes, rs.Confirmed, rs.Forged)
		}
		if a := r.roundTripAllocs(t, p); a != 0 {
			t.Errorf("Send through the route + Next: %v allocs/op, want 0", a)
		}
	})
	for name, sc := range map[string]udp.SenderConfig{
		"reliable": {Reliable: true},
		"batching": {BatchBytes: 512},
	} {
		t.Run(name, func(t *testing.T) {
			var d dialer
			main := openSock(t, lo)
			sc.TopicID, sc.MaxPayload, sc.Dial = 9, 64, d.dial
			sc.Peers = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9")}
			snd, err := udp.NewSender(main, sc)
			if err != nil {
				t.Fatal(err)
			}
			snd.Close()
			if a := d.addrs(); len(a) != 0 {
				t.Fatalf("%s sender dialled %v; want no connected socket", name, a)
			}
		})
	}
}
