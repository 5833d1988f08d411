//go:build linux

package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// TestUDPSendStampPrecedesReliableWait is TestSendStampPrecedesReliableWait
// for UDP: Header.SendMono is taken at the entry of Send, before the
// reliable window wait and the copy, and at the entry of Publish on the
// loan path. The back-pressure comes from a second static peer that the
// test plays itself (a plain socket): it withholds its ACKNACK for message
// 1 for `slow`, so Send of message 2 blocks on the window (Depth 1) while
// the real subscriber has long acknowledged.
func TestUDPSendStampPrecedesReliableWait(t *testing.T) {
	const slow = 50 * time.Millisecond
	fake, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	n := openNode(t, "udpstamp", testDomain(t))
	c := middleware.Contract{Topic: "udpstamp", MaxPayload: 64, Depth: 1, Reliability: middleware.Reliable,
		Transport: middleware.TransportUDP, UDP: middleware.UDPConfig{Listen: "127.0.0.1:0"}}
	sub, err := n.NewSubscriber(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.UDP.Listen = ""
	c.UDP.Peers = []string{sub.LocalUDPAddr().String(), fake.LocalAddr().String()}
	pub, err := n.NewPublisher(c, &middleware.PublisherOptions{SendTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	us, _ := pub.UDPStats()
	pubAddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), us.Local.Port()))

	// The fake peer acknowledges every DATA it sees at once, except
	// message 1: that ack waits until release is closed, plus slow.
	release := make(chan struct{})
	fakeDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 70000)
		out := make([]byte, 64)
		var d udp.Data
		for {
			m, _, err := fake.ReadFromUDP(buf)
			if err != nil {
				fakeDone <- nil // closed at cleanup
				return
			}
			if d.UnmarshalBinary(buf[:m]) != nil {
				continue // heartbeats
			}
			if d.Seq == 1 {
				<-release
				time.Sleep(slow) // the slow peer: Send 2 waits for this ack
			}
			a := udp.AckNack{TopicID: middleware.TopicID(c.Topic), Epoch: us.Epoch, Ack: d.Seq}
			k, _ := a.MarshalBinaryTo(out)
			if _, err := fake.WriteToUDP(out[:k], pubAddr); err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil
				}
				fakeDone <- err
				return
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, errc := receiveStamps(ctx, sub, nil)
	if err := pub.Send([]byte("one")); err != nil {
		t.Fatal(err)
	}
	checkSendStamps(t, pub, release, "window back-pressure", errc, res)
	fake.Close()
	if err := <-fakeDone; err != nil {
		t.Errorf("fake peer: %v", err)
	}
}

// TestUDPAnnounceOnePerNodePerPeriod: a node with three UDP endpoints on
// one announce group sends one ANNOUNCE datagram per period listing all
// three (not one per endpoint), and drops an endpoint from the list when
// it closes.
func TestUDPAnnounceOnePerNodePerPeriod(t *testing.T) {
	const period = 50 * time.Millisecond
	group := netip.MustParseAddrPort(fmt.Sprintf("239.255.91.8:%d", freeUDPPort(t)))
	sock, err := udp.Open(udp.SocketConfig{Group: group, Interface: "lo"})
	if err != nil {
		t.Fatal(err)
	}
	type dgram struct {
		at      time.Time
		entries []string
	}
	got := make(chan dgram, 256)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	ldone := make(chan error, 1)
	go func() {
		ldone <- udp.ListenAnnounces(ctx, sock, func(_ netip.AddrPort, a *udp.Announce) {
			if a.NodeName() != "udp-ann3" {
				return // another test's node
			}
			var es []string
			for i := 0; i < a.N; i++ {
				es = append(es, fmt.Sprintf("%d:%s", a.Entries[i].Role, a.Entries[i].TopicName()))
			}
			slices.Sort(es)
			got <- dgram{time.Now(), es}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-ldone; !errors.Is(err, context.Canceled) {
			t.Errorf("ListenAnnounces: %v", err)
		}
		sock.Close()
	})

	n := openNode(t, "udp-ann3", testDomain(t))
	ann := middleware.UDPConfig{Interface: "lo", Announce: group.String(), AnnouncePeriod: period}
	mk := func(topic string, sub bool) io.Closer {
		c := middleware.Contract{Topic: topic, MaxPayload: 100, Transport: middleware.TransportUDP, UDP: ann}
		if sub {
			c.UDP.Listen = "127.0.0.1:0"
			s, err := n.NewSubscriber(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		p, err := n.NewPublisher(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("ann/a", true)
	subB := mk("ann/b", true)
	mk("ann/a", false)
	all := []string{"1:ann/a", "2:ann/a", "2:ann/b"}

	next := func() dgram {
		select {
		case d := <-got:
			return d
		case <-ctx.Done():
			t.Fatal("no announce from the node")
			return dgram{}
		}
	}
	// Skip what was sent while the endpoints were being created.
	d := next()
	for !slices.Equal(d.entries, all) {
		d = next()
	}
	start, count := d.at, 0
	for time.Since(start) < 10*period {
		d = next()
		if !slices.Equal(d.entries, all) {
			t.Fatalf("announce listed %v, want all three endpoints %v in one datagram", d.entries, all)
		}
		count++
	}
	window := d.at.Sub(start)
	// Late timers never bunch up (the next one is due a period after the
	// last send), so count ≤ window/period; at least 2 even on a loaded
	// machine.
	if limit := int(window/period) + 1; count > limit || count < 2 {
		t.Fatalf("%d announce datagrams in %v at a %v period, want 2..%d (one per period, not one per endpoint)", count, window, period, limit)
	}
	t.Logf("%d datagrams with 3 entries each in %v", count, window)

	subB.Close()
	for !slices.Equal(d.entries, []string{"1:ann/a", "2:ann/a"}) {
		d = next()
	}
}
