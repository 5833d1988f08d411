package udp

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// idleConn takes writes and blocks reads until closed: a socket nobody
// sends to.
type idleConn struct {
	once   sync.Once
	closed chan struct{}
}

func (c *idleConn) WriteTo([]byte, netip.AddrPort) error { return nil }
func (c *idleConn) ReadFrom([]byte) (int, netip.AddrPort, int64, error) {
	<-c.closed
	return 0, netip.AddrPort{}, 0, net.ErrClosed
}
func (c *idleConn) SetReadDeadline(time.Time) error { return nil }
func (c *idleConn) LocalAddr() netip.AddrPort       { return netip.MustParseAddrPort("127.0.0.1:9") }
func (c *idleConn) Close() error                    { c.once.Do(func() { close(c.closed) }); return nil }

// TestKeepLastLoanTakesEntryOutOfHistory: a keep-last loan fills the entry
// of the oldest message in place, so from the loan on the history starts
// one later; a NACK for that message must draw a HEARTBEAT, never a
// retransmission of half-written bytes.
func TestKeepLastLoanTakesEntryOutOfHistory(t *testing.T) {
	conn := &idleConn{closed: make(chan struct{})}
	s, err := NewSender(conn, SenderConfig{TopicID: 1, MaxPayload: 64, Reliable: true, Depth: 2, KeepLast: true,
		HeartbeatPeriod: time.Hour, Peers: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:10")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for range 3 {
		if err := s.Send([]byte("history")); err != nil {
			t.Fatal(err)
		}
	}
	oldest := func() (uint64, uint64) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o := s.oldestLocked()
		return o, s.hist[(o-1)%uint64(len(s.hist))].seq
	}
	if o, held := oldest(); o != 2 || held != 2 {
		t.Fatalf("after 3 sends at depth 2: oldest %d (entry holds %d), want 2", o, held)
	}
	b, err := s.Loan()
	if err != nil {
		t.Fatal(err)
	}
	copy(b, "half-new")
	if o, held := oldest(); o != 3 || held != 3 {
		t.Fatalf("during the loan: oldest %d (entry holds %d), want 3: message 2's entry is being written", o, held)
	}
	if err := s.Publish(8); err != nil {
		t.Fatal(err)
	}
	if o, held := oldest(); o != 3 || held != 3 {
		t.Fatalf("after publishing 4: oldest %d (entry holds %d), want 3", o, held)
	}
}

// TestSkipDeliversCompleteMessagesBehindGap: when a stream gives up on a
// gap (a HEARTBEAT's first passed it, or, keep-last, a DATA Depth ahead),
// the messages behind the gap that did arrive whole are delivered, in
// order; only the missing ones count lost. They used to be discarded
// with the gap and counted lost too.
func TestSkipDeliversCompleteMessagesBehindGap(t *testing.T) {
	src := netip.MustParseAddrPort("10.0.0.1:1000")
	buf := make([]byte, 512)
	for _, tc := range []struct {
		name      string
		keepLast  bool
		give      func(r *Receiver, now int64) // makes the stream give up on 2
		wantSeqs  []uint64
		wantLost  []uint64
		totalLost uint64
	}{
		{"heartbeat first=5", false, func(r *Receiver, now int64) {
			hb := Heartbeat{TopicID: 1, Epoch: 5, FirstSeq: 5, LastSeq: 5}
			n, _ := hb.MarshalBinaryTo(buf)
			r.handle(buf[:n], src, now, now)
		}, []uint64{1, 3, 4}, []uint64{0, 1, 0}, 1},
		{"keep-last data 7 at depth 4", true, func(r *Receiver, now int64) {
			d := Data{TopicID: 1, Epoch: 5, MsgHeader: MsgHeader{Seq: 7}, KeepLast: true, MsgLen: 8, FragSize: 256, FragCount: 1, Payload: make([]byte, 8)}
			n, _ := d.MarshalBinaryTo(buf)
			r.handle(buf[:n], src, now, now)
		}, []uint64{1, 3, 4}, []uint64{0, 1, 0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newReceiver(&nopConn{}, ReceiverConfig{TopicID: 1, MaxPayload: 64, Reliable: true, Depth: 4, KeepLast: tc.keepLast}, false)
			if err != nil {
				t.Fatal(err)
			}
			data := func(seq uint64, now int64) {
				d := Data{TopicID: 1, Epoch: 5, MsgHeader: MsgHeader{Seq: seq}, KeepLast: tc.keepLast, MsgLen: 8, FragSize: 256, FragCount: 1, Payload: make([]byte, 8)}
				n, err := d.MarshalBinaryTo(buf)
				if err != nil {
					t.Fatal(err)
				}
				r.handle(buf[:n], src, now, now)
			}
			data(1, 1)
			si := -1
			for i := range r.streams {
				if r.streams[i].used {
					si = i
				}
			}
			if si < 0 {
				t.Fatal("no stream for the first DATA")
			}
			r.confirm(si, 1) // as if the challenge's echo came back
			data(3, 2)       // 2 never comes
			data(4, 3)
			tc.give(r, 4)
			var seqs, lost []uint64
			for r.TryNext(func(d *Delivery) { seqs, lost = append(seqs, d.Seq), append(lost, d.Lost) }) {
			}
			if fmt.Sprint(seqs, lost) != fmt.Sprint(tc.wantSeqs, tc.wantLost) || r.Stats().Lost != tc.totalLost {
				t.Fatalf("delivered %v with lost %v (total %d); want %v with %v (total %d)", seqs, lost, r.Stats().Lost, tc.wantSeqs, tc.wantLost, tc.totalLost)
			}
		})
	}
}

// TestKeepLastSkipPastDuplicateCountsDuplicate: a duplicate fragment that
// makes a keep-last stream skip, where the skip then delivers up to and
// past the duplicate's own message, is a duplicate, not an overrun (its
// seq is behind the stream's next by then).
func TestKeepLastSkipPastDuplicateCountsDuplicate(t *testing.T) {
	src := netip.MustParseAddrPort("10.0.0.1:1000")
	buf := make([]byte, 512)
	r, err := newReceiver(&nopConn{}, ReceiverConfig{TopicID: 1, MaxPayload: 64, Reliable: true, Depth: 4, KeepLast: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	data := func(seq uint64) {
		d := Data{TopicID: 1, Epoch: 5, MsgHeader: MsgHeader{Seq: seq}, KeepLast: true, MsgLen: 8, FragSize: 256, FragCount: 1, Payload: make([]byte, 8)}
		n, err := d.MarshalBinaryTo(buf)
		if err != nil {
			t.Fatal(err)
		}
		r.handle(buf[:n], src, int64(seq), int64(seq))
	}
	// Unconfirmed: 1 and 3…7 arrive (2 never does); no skip yet.
	for _, q := range []uint64{1, 3, 4, 5, 6, 7} {
		data(q)
	}
	for i := range r.streams {
		if r.streams[i].used {
			r.confirm(i, 1)
		}
	}
	data(7) // a duplicate, Depth ahead of the gap at 2: skip 2, deliver 3…7
	var seqs []uint64
	for r.TryNext(func(d *Delivery) { seqs = append(seqs, d.Seq) }) {
	}
	st := r.Stats()
	if fmt.Sprint(seqs) != "[1 3 4 5 6 7]" || st.Lost != 1 || st.Duplicates != 1 || st.Overruns != 0 {
		t.Fatalf("delivered %v, lost %d, duplicates %d, overruns %d; want [1 3 4 5 6 7], 1, 1, 0", seqs, st.Lost, st.Duplicates, st.Overruns)
	}
}
