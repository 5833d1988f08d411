package udp_test

import (
	"net/netip"
	"testing"

	"github.com/hilrig/hilrig/middleware/internal/udp"
)

func BenchmarkTmpSend16(b *testing.B) {
	sink := openSock(b, lo)
	conn := openSock(b, lo)
	snd, err := udp.NewSender(conn, udp.SenderConfig{TopicID: 5, MaxPayload: 64, Peers: []netip.AddrPort{sink.LocalAddr()}})
	if err != nil {
		b.Fatal(err)
	}
	defer snd.Close()
	p := make([]byte, 16)
	for b.Loop() {
		_ = snd.Send(p)
	}
}

func BenchmarkTmpRaw16(b *testing.B) {
	sink := openSock(b, lo)
	conn := openSock(b, lo)
	p := make([]byte, 16+44)
	for b.Loop() {
		_ = conn.WriteTo(p, sink.LocalAddr())
	}
}
