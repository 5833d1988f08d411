//go:build linux

package udp

import (
	"net/netip"
	"testing"
	"time"
)

// TestControlGoroutineBacksOffWhileSenderSends: while a sender publishes
// without pause (reading the socket inline every inlineEvery), the control
// goroutine looks back twice as late each time, up to leaseCheckMax,
// instead of every senderLease; and once the sender stops it still takes
// the socket back, within senderLease + leaseCheckMax.
func TestControlGoroutineBacksOffWhileSenderSends(t *testing.T) {
	sink := openLo(t, nil)
	snd, err := NewSender(openLo(t, nil), SenderConfig{TopicID: 5, MaxPayload: 64, Reliable: true, KeepLast: true, Depth: 1,
		HeartbeatPeriod: time.Hour, Peers: []netip.AddrPort{sink.LocalAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	if snd.dc == nil {
		t.Fatal("no direct reads on a Socket: the lease is not in play")
	}
	const busy = 400 * time.Millisecond
	msg := make([]byte, 16)
	start := time.Now()
	for time.Since(start) < busy {
		if err := snd.Send(msg); err != nil {
			t.Fatal(err)
		}
	}
	stopped := time.Now()
	checks := snd.lease.checks.Load()
	// 5, 10, 20, then 40 ms: about 12 looks in 400 ms, where a look every
	// senderLease would be 80. The bound allows for a loaded machine: a
	// sender stalled past its lease lets the goroutine take the socket,
	// and the back-off starts again at the next hand-over.
	if max := uint64(busy / (2 * senderLease)); checks == 0 || checks > max {
		t.Errorf("the control goroutine looked %d times in %v of continuous sending; want 1..%d (backing off to %v)", checks, busy, max, leaseCheckMax)
	}
	// The goroutine holds rmu while it reads the socket itself.
	deadline := stopped.Add(time.Second)
	for snd.rmu.TryLock() {
		snd.rmu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the control goroutine did not take the socket back within 1 s of the sender stopping (bound %v)", senderLease+leaseCheckMax)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("%d looks in %v; socket taken back %v after the sender stopped", checks, busy, time.Since(stopped).Round(time.Millisecond))
}
