package udp

import (
	"net/netip"
	"testing"
	"time"
)

// nopConn swallows writes (ACKNACKs) and is never read.
type nopConn struct{ writes int }

func (c *nopConn) WriteTo(b []byte, _ netip.AddrPort) error {
	if _, err := Parse(b); err != nil {
		panic("receiver wrote an invalid datagram: " + err.Error())
	}
	c.writes++
	return nil
}
func (c *nopConn) ReadFrom([]byte) (int, netip.AddrPort, int64, error) {
	return 0, netip.AddrPort{}, 0, ErrClosed
}
func (c *nopConn) SetReadDeadline(time.Time) error { return nil }
func (c *nopConn) LocalAddr() netip.AddrPort       { return netip.AddrPort{} }
func (c *nopConn) Close() error                    { return nil }

// fuzzRecord frames one datagram for FuzzReceiver: 2-byte length, 1 control
// byte, datagram.
func fuzzRecord(dst []byte, ctl byte, dg []byte) []byte {
	dst = append(dst, byte(len(dg)>>8), byte(len(dg)), ctl)
	return append(dst, dg...)
}

// FuzzReceiver drives the receive state machine (validation, streams,
// reassembly, reorder, NACK, heartbeats, timeouts) with arbitrary datagram
// sequences from a few sources. It must never panic, never exceed the pool
// bound, never deliver more than MaxPayload, and only ever write valid
// datagrams.
func FuzzReceiver(f *testing.F) {
	buf := make([]byte, 8192)
	var seed []byte
	for seq := uint64(1); seq <= 3; seq++ {
		for fi := uint32(0); fi < 3; fi++ {
			d := Data{TopicID: 1, Epoch: 5, MsgHeader: MsgHeader{Seq: seq}, MsgLen: 600, FragSize: 256, FragIndex: fi, FragCount: 3}
			d.Payload = make([]byte, min(256, 600-int(fi)*256))
			n, _ := d.MarshalBinaryTo(buf)
			seed = fuzzRecord(seed, 0x80, buf[:n])
		}
	}
	hb := Heartbeat{TopicID: 1, Epoch: 5, FirstSeq: 2, LastSeq: 6}
	n, _ := hb.MarshalBinaryTo(buf)
	seed = fuzzRecord(seed, 0x8c, buf[:n])
	f.Add(seed, true)
	f.Add(seed, false)
	var w BatchWriter
	w.Reset(make([]byte, 1000))
	w.Append(&Record{MsgHeader: MsgHeader{Seq: 4}, Payload: []byte("abc")})
	w.Append(&Record{MsgHeader: MsgHeader{Seq: 5}, Payload: []byte("de")})
	f.Add(fuzzRecord(append([]byte(nil), seed...), 0x13, w.Finish(1, 5)), true)

	srcs := [4]netip.AddrPort{
		netip.MustParseAddrPort("10.0.0.1:1000"), netip.MustParseAddrPort("10.0.0.1:1001"),
		netip.MustParseAddrPort("10.0.0.2:1000"), netip.MustParseAddrPort("192.0.2.9:7"),
	}
	f.Fuzz(func(t *testing.T, in []byte, reliable bool) {
		conn := &nopConn{}
		r, err := newReceiver(conn, ReceiverConfig{
			TopicID: 1, MaxPayload: 2048, Reliable: reliable, Depth: 4, ReassemblyBytes: 4 * 2048,
			MaxWriters: 2, AllowFrom: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
			WriterTimeout: 50 * time.Millisecond, ReassemblyTimeout: 10 * time.Millisecond,
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		limit := uint64(r.PoolLimit())
		now := int64(0)
		for len(in) >= 3 {
			l := min(int(in[0])<<8|int(in[1]), len(in)-3)
			ctl := in[2]
			dg := append([]byte(nil), in[3:3+l]...)
			in = in[3+l:]
			if ctl&0x01 != 0 && len(dg) >= CommonLen && len(dg) <= MaxDatagram {
				// Reseal so the fuzzer reaches the state machine.
				be.PutUint32(dg[0:], Magic)
				dg[4] = Version
				be.PutUint16(dg[6:], uint16(len(dg)))
				if ctl&0x02 != 0 {
					be.PutUint32(dg[8:], 1)
				}
				be.PutUint32(dg[16:], checksum(dg))
			}
			now += int64(ctl&0x0c) * int64(time.Millisecond)
			r.handle(dg, srcs[(ctl>>4)&3], now, now)
			if ctl&0x80 != 0 {
				r.tick(now)
			}
			for r.TryNext(func(d *Delivery) {
				if len(d.Payload) > 2048 {
					t.Fatalf("delivered %d bytes > MaxPayload", len(d.Payload))
				}
			}) {
			}
			if st := r.Stats(); st.PoolBytes > limit {
				t.Fatalf("pool %d > limit %d", st.PoolBytes, limit)
			}
		}
	})
}
