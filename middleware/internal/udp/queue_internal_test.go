package udp

import (
	"fmt"
	"net/netip"
	"testing"
)

// TestBestEffortQueueKeepsNewest: a best-effort receiver whose consumer
// does not read keeps the newest Queue completed messages, discards the
// older ones (Dropped) and reports them lost with the next delivery, so
// every sequence number is delivered or counted lost; the messages of one
// BATCH datagram are never discarded for each other, only for a later
// datagram. Before the bound, all of them waited (up to the pool's slots).
func TestBestEffortQueueKeepsNewest(t *testing.T) {
	src := netip.MustParseAddrPort("10.0.0.1:1000")
	buf := make([]byte, 1024)
	r, err := newReceiver(&nopConn{}, ReceiverConfig{TopicID: 1, MaxPayload: 64, Queue: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	data := func(seq uint64) {
		d := Data{TopicID: 1, Epoch: 5, MsgHeader: MsgHeader{Seq: seq}, MsgLen: 8, FragSize: 256, FragCount: 1, Payload: make([]byte, 8)}
		n, err := d.MarshalBinaryTo(buf)
		if err != nil {
			t.Fatal(err)
		}
		r.handle(buf[:n], src, int64(seq), int64(seq))
	}
	take := func() string {
		var seqs, lost []uint64
		for r.TryNext(func(d *Delivery) { seqs, lost = append(seqs, d.Seq), append(lost, d.Lost) }) {
		}
		return fmt.Sprint(seqs, lost)
	}
	data(1)
	for i := range r.streams {
		if r.streams[i].used {
			r.confirm(i, 1) // as if the challenge's echo came back
		}
	}
	for q := uint64(2); q <= 10; q++ {
		data(q)
	}
	if got, st := take(), r.Stats(); got != "[9 10] [8 0]" || st.Dropped != 8 || st.Lost != 8 || st.Delivered != 2 {
		t.Fatalf("after 1…10 unread at Queue 2: delivered %s (seqs, lost), stats dropped %d lost %d delivered %d; want [9 10] [8 0], 8, 8, 2",
			got, st.Dropped, st.Lost, st.Delivered)
	}

	// 11 waits; a BATCH of 12…16 arrives: 11 makes room, the batch stays
	// whole; then 17 alone keeps the batch's newest (16) and itself.
	data(11)
	var w BatchWriter
	w.Reset(make([]byte, 1024))
	for q := uint64(12); q <= 16; q++ {
		w.Append(&Record{MsgHeader: MsgHeader{Seq: q}, Payload: make([]byte, 8)})
	}
	b := w.Finish(1, 5)
	r.handle(b, src, 12, 12)
	if got := fmt.Sprint(len(r.ready)); got != "5" {
		t.Fatalf("after the batch 12…16 with 11 waiting: %s waiting, want 5 (the whole batch)", got)
	}
	data(17)
	if got, st := take(), r.Stats(); got != "[16 17] [5 0]" || st.Dropped != 13 || st.Lost != 13 || st.Delivered != 4 {
		t.Fatalf("after 11, batch 12…16, 17: delivered %s, stats dropped %d lost %d delivered %d; want [16 17] [5 0], 13, 13, 4",
			got, st.Dropped, st.Lost, st.Delivered)
	}
}

// TestBestEffortRcvBufHoldsDepthMessages: the best-effort socket buffer
// estimate covers the kernel's charge for depth whole messages (2×len +
// 1 KiB a datagram, after the kernel doubles the request), is never below
// the wake-up floor, and grows with the depth above it.
func TestBestEffortRcvBufHoldsDepthMessages(t *testing.T) {
	for _, tc := range []struct{ depth, payload, frag int }{
		{1, 24, 1404}, {2, 64, 1404}, {1, 1 << 20, 1404}, {4, 1 << 20, MaxDatagram - DataHeaderLen}, {1, 0, 1404},
	} {
		got := BestEffortRcvBuf(tc.depth, tc.payload, tc.frag)
		frags := FragCountFor(tc.payload, tc.frag)
		// The largest true size measured was 2,304 B for a 1,472 B
		// datagram (1.57×) and 832 B for 92 B: under 1.6×len + 800.
		need := tc.depth * frags * (DataHeaderLen + min(max(tc.payload, 1), tc.frag)) * 16 / 10
		if got < BestEffortRcvFloor || 2*got < need || 2*got > max(2*need+tc.depth*frags*2048, 2*BestEffortRcvFloor) {
			t.Errorf("BestEffortRcvBuf(%d, %d, %d) = %d (kernel: %d), want room for %d B of datagrams and not much more",
				tc.depth, tc.payload, tc.frag, got, 2*got, need)
		}
	}
	if a, b := BestEffortRcvBuf(1, 64<<10, 1404), BestEffortRcvBuf(3, 64<<10, 1404); b != 3*a {
		t.Errorf("depth 3 buffer %d, want 3× depth 1's %d", b, a)
	}
}
