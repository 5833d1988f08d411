package udp_test

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// BenchmarkSendRoute splits the cost of a 16 B best-effort publish
// (issue 16: hilrig's unbatched rate against raw UDP's) in one run of
// alternating rounds: write(2) on a socket connected to the sink (the
// raw-UDP baseline of `hilrig bench throughput`); WriteTo on the
// publisher's own socket, a sendto with an address and so a route lookup
// per datagram (that socket takes ACKNACKs from any subscriber, so it
// cannot be connected), of the size Send sends; and Sender.Send, the
// whole publish; and Sender.Send on a Conn that drops every datagram,
// the protocol's own per-message work without the system call; and
// Sender.Send through a socket connected to the sink (SenderConfig.Dial,
// issue 37: target ≥ 0.95× the connected write's rate). Reports ns per
// datagram of each and the ratios to the connected write.
// docs/bench.md has what it showed.
func BenchmarkSendRoute(b *testing.B) {
	sink := openSock(b, lo)
	to := sink.LocalAddr()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().As4()}); err != nil {
		b.Fatal(err)
	}
	// The sink is drained on another thread, as in the throughput bench:
	// an skb freed by the receiver is part of what the send costs.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 2048)
		for {
			if _, _, _, err := sink.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	defer func() { sink.Close(); <-drained }()
	ss := openSock(b, netip.IPv4Unspecified())
	snd, err := udp.NewSender(ss, udp.SenderConfig{TopicID: 1, MaxPayload: 64, Peers: []netip.AddrPort{to}})
	if err != nil {
		b.Fatal(err)
	}
	defer snd.Close()
	var d dialer
	rsnd, err := udp.NewSender(openSock(b, netip.IPv4Unspecified()), udp.SenderConfig{TopicID: 1, MaxPayload: 64, Peers: []netip.AddrPort{to}, Dial: d.dial})
	if err != nil {
		b.Fatal(err)
	}
	defer rsnd.Close()
	if len(d.addrs()) != 1 {
		b.Fatalf("routed sender dialled %v, want one connected socket", d.addrs())
	}
	drop := newDropConn()
	dsnd, err := udp.NewSender(drop, udp.SenderConfig{TopicID: 1, MaxPayload: 64, Peers: []netip.AddrPort{to}})
	if err != nil {
		b.Fatal(err)
	}
	defer dsnd.Close()
	msg := make([]byte, 16)
	big := make([]byte, 16+udp.DataHeaderLen)
	var unconn, conn, send, proto, routed time.Duration
	const round = 256
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		t0 := time.Now()
		for range n {
			if err := ss.WriteTo(big, to); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for range n {
			if _, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg))); e != 0 && e != unix.EAGAIN {
				b.Fatal(e)
			}
		}
		t2 := time.Now()
		for range n {
			if err := snd.Send(msg); err != nil {
				b.Fatal(err)
			}
		}
		t3 := time.Now()
		for range n {
			if err := dsnd.Send(msg); err != nil {
				b.Fatal(err)
			}
		}
		t4 := time.Now()
		for range n {
			if err := rsnd.Send(msg); err != nil {
				b.Fatal(err)
			}
		}
		unconn += t1.Sub(t0)
		conn += t2.Sub(t1)
		send += t3.Sub(t2)
		proto += t4.Sub(t3)
		routed += time.Since(t4)
	}
	b.StopTimer()
	b.ReportMetric(float64(unconn.Nanoseconds())/float64(b.N), "sendto-ns/dgram")
	b.ReportMetric(float64(conn.Nanoseconds())/float64(b.N), "connected-ns/dgram")
	b.ReportMetric(float64(send.Nanoseconds())/float64(b.N), "Sender.Send-ns/msg")
	b.ReportMetric(float64(unconn)/float64(conn), "sendto/connected")
	b.ReportMetric(float64(send)/float64(conn), "Send/connected")
	b.ReportMetric(float64(proto.Nanoseconds())/float64(b.N), "protocol-ns/msg")
	b.ReportMetric(float64(proto)/float64(conn), "protocol/connected")
	b.ReportMetric(float64(routed.Nanoseconds())/float64(b.N), "routed-Send-ns/msg")
	b.ReportMetric(float64(conn)/float64(routed), "routed-rate/connected-rate")
	b.ReportMetric(0, "ns/op") // the ratios above are the result
}

// dropConn is a Conn whose writes vanish and whose reads block until
// Close: a Sender on it does all of a publish but the system call.
type dropConn struct {
	once   sync.Once
	closed chan struct{}
}

func newDropConn() *dropConn { return &dropConn{closed: make(chan struct{})} }

func (c *dropConn) WriteTo([]byte, netip.AddrPort) error { return nil }
func (c *dropConn) ReadFrom([]byte) (int, netip.AddrPort, int64, error) {
	<-c.closed
	return 0, netip.AddrPort{}, 0, net.ErrClosed
}
func (c *dropConn) SetReadDeadline(time.Time) error { return nil }
func (c *dropConn) LocalAddr() netip.AddrPort       { return netip.AddrPortFrom(netip.IPv4Unspecified(), 1) }
func (c *dropConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
