package udp_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware/internal/udp"
)

// recConn records the kind and first payload byte of every datagram
// written, in order.
type recConn struct{ wire []string }

func (c *recConn) WriteTo(b []byte, _ netip.AddrPort) error {
	c.wire = append(c.wire, string([]byte{"?DBH"[b[5]&3], b[udp.CommonLen]}))
	return nil
}
func (c *recConn) ReadFrom([]byte) (int, netip.AddrPort, int64, error) {
	return 0, netip.AddrPort{}, 0, nil
}
func (c *recConn) SetReadDeadline(time.Time) error { return nil }
func (c *recConn) LocalAddr() netip.AddrPort       { return netip.AddrPort{} }
func (c *recConn) Close() error                    { return nil }

// TestFaultReorderIsAmongFaultedKinds: a datagram held for reordering is
// sent after the next datagram of a faulted kind, whatever unfaulted
// datagrams (heartbeats, with Kinds = DATA|BATCH) pass meanwhile. Before,
// a heartbeat released it: whether a held DATA was overtaken by a newer
// DATA then depended on when the heartbeat timer fired, so the seeded
// faults were not the same on every run and the faults suite's exact
// best-effort loss count failed on a loaded machine (lost 182, injected
// 88 dropped + 95 reordered, one of them released by a heartbeat and
// delivered in order).
func TestFaultReorderIsAmongFaultedKinds(t *testing.T) {
	rc := &recConn{}
	f := udp.NewFaultConn(rc, udp.FaultConfig{Seed: 1, Reorder: 1, Kinds: udp.KindMask(udp.KindData, udp.KindBatch)})
	dg := func(k udp.Kind, id byte) []byte {
		b := make([]byte, udp.CommonLen+1)
		b[5], b[udp.CommonLen] = byte(k), id
		return b
	}
	for _, b := range [][]byte{dg(udp.KindData, '1'), dg(udp.KindHeartbeat, 'h'), dg(udp.KindData, '2'), dg(udp.KindData, '3')} {
		if err := f.WriteTo(b, netip.AddrPort{}); err != nil {
			t.Fatal(err)
		}
	}
	// D1 held; the heartbeat passes; D2 goes and releases D1; D3 is held.
	if want := []string{"Hh", "D2", "D1"}; !slices.Equal(rc.wire, want) {
		t.Fatalf("wire order %q, want %q", rc.wire, want)
	}
	if s := f.Stats(); s.Reordered != 2 || s.Seen != 3 {
		t.Fatalf("stats %+v, want Seen 3 Reordered 2", s)
	}
	f.SetEnabled(false) // releases D3
	if want := []string{"Hh", "D2", "D1", "D3"}; !slices.Equal(rc.wire, want) {
		t.Fatalf("after SetEnabled(false): wire order %q, want %q", rc.wire, want)
	}
}
