package udp_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/udp"
	"github.com/hilrig/hilrig/middleware/netns"
)

// newNetnsPair makes two namespaces joined by a veth of the given MTU, or
// skips naming the missing capability.
func newNetnsPair(t *testing.T, mtu int) *netns.Pair {
	t.Helper()
	if err := netns.Available(); err != nil {
		t.Skipf("skipping cross-namespace UDP test: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := netns.NewPair(ctx, &netns.PairOptions{MTU: mtu})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if names, _ := netns.List(); slices.Contains(names, p.A.Name) || slices.Contains(names, p.B.Name) {
			t.Errorf("namespaces left behind: %v", names)
		}
	})
	return p
}

func openIn(t *testing.T, ns *netns.NS, cfg udp.SocketConfig) *udp.Socket {
	t.Helper()
	var s *udp.Socket
	if err := ns.Do(func() (err error) { s, err = udp.Open(cfg); return err }); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReliable10MiBAcrossNamespaces: 10 MiB frames at 20 Hz over a veth
// (MTU 9000) with 5% injected loss and 5% reordering arrive intact, complete
// and in order.
func TestReliable10MiBAcrossNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 300 MiB across namespaces")
	}
	const (
		mtu    = 9000
		size   = 10 << 20
		frames = 30
		topic  = 77
	)
	p := newNetnsPair(t, mtu)
	rs := openIn(t, p.B, udp.SocketConfig{Listen: netip.AddrPortFrom(p.BAddr, 0), RcvBuf: 32 << 20, Timestamps: true})
	rcv, err := udp.NewReceiver(rs, udp.ReceiverConfig{
		TopicID: topic, MaxPayload: size, Reliable: true, Depth: 4, ReassemblyBytes: 6 * size,
		AllowFrom: []netip.Prefix{netip.PrefixFrom(p.AAddr, 32)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ss := openIn(t, p.A, udp.SocketConfig{Listen: netip.AddrPortFrom(p.AAddr, 0), SndBuf: 8 << 20, RcvBuf: 1 << 20})
	fc := udp.NewFaultConn(ss, udp.FaultConfig{Seed: 2026, Drop: 0.05, Reorder: 0.05})
	snd, err := udp.NewSender(fc, udp.SenderConfig{
		TopicID: topic, MaxPayload: size, FragSize: mtu - 28 - udp.DataHeaderLen, Reliable: true, Depth: 4,
		Peers: []netip.AddrPort{rs.LocalAddr()}, SendTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	eventually(t, 5*time.Second, "subscriber heard across the veth", func() bool { return snd.LiveSubscribers() == 1 })

	c := collect(rcv, true)
	tick := time.NewTicker(50 * time.Millisecond) // 20 Hz: a rate, not synchronisation
	defer tick.Stop()
	start := time.Now()
	for i := uint64(1); i <= frames; i++ {
		<-tick.C
		buf, err := snd.Loan()
		if err != nil {
			t.Fatal(err)
		}
		fill(buf[:size], i)
		if err := snd.Publish(size); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	eventually(t, 30*time.Second, "all frames delivered", func() bool { return rcv.Stats().Delivered == frames })
	elapsed := time.Since(start)
	c.finish()
	rst, sst, fst := rcv.Stats(), snd.Stats(), fc.Stats()
	if c.err != nil || c.got != frames || c.last != frames || rst.Lost != 0 {
		t.Fatalf("delivered %d (last %d), lost %d, err %v", c.got, c.last, rst.Lost, c.err)
	}
	if fst.Dropped == 0 || fst.Reordered == 0 || sst.Retransmits == 0 {
		t.Fatalf("no faults exercised: %+v, retransmits %d", fst, sst.Retransmits)
	}
	if out, err := p.B.Command(context.Background(), "cat", "/proc/net/snmp").Output(); err == nil {
		t.Logf("receiver namespace UDP counters:\n%s", udpSNMP(string(out)))
	}
	t.Logf("receiver: duplicates %d, NACKs %d", rst.Duplicates, rst.NacksSent)
	t.Logf("%d × 10 MiB in %v: fault %+v; retransmitted %d fragments on %d NACKs; window waits %v; rx pool %d MiB",
		frames, elapsed.Round(time.Millisecond), fst, sst.Retransmits, sst.NacksReceived, sst.Blocked, rst.PoolBytes>>20)
}

// udpSNMP returns the Udp: lines of /proc/net/snmp (RcvbufErrors shows
// kernel drops the fault layer did not make).
func udpSNMP(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "Udp:") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
