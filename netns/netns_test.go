package netns_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/netns"
	"github.com/hilrig/hilrig/netns/netnstest"
)

func TestPairUDP(t *testing.T) {
	p := netnstest.Pair(t, nil)
	own, err := netns.ListOwn()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(own, p.A.Name) || !slices.Contains(own, p.B.Name) {
		t.Errorf("ListOwn %v lacks this process's pair %s, %s", own, p.A.Name, p.B.Name)
	}
	var rx *net.UDPConn
	if err := p.B.Do(func() (err error) {
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: p.BAddr.AsSlice(), Port: 0})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	var tx *net.UDPConn
	if err := p.A.Do(func() (err error) {
		tx, err = net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if _, err := tx.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := rx.ReadFromUDP(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "ping" || !from.IP.Equal(p.AAddr.AsSlice()) {
		t.Fatalf("got %q from %v, want ping from %v", buf[:n], from, p.AAddr)
	}
	// The default namespace must not see the pair's addresses.
	if _, err := net.DialUDP("udp4", &net.UDPAddr{IP: p.AAddr.AsSlice()}, &net.UDPAddr{IP: p.BAddr.AsSlice(), Port: 9}); err == nil {
		t.Fatal("pair address usable from the default namespace")
	}
}
