package udp_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/hilrig/hilrig/middleware/internal/udp"
)

func TestDataRoundTrip(t *testing.T) {
	payload := bytes.Repeat([]byte{0xAB}, 1000)
	tests := []struct {
		name string
		d    udp.Data
	}{
		{"empty", udp.Data{TopicID: 1, Epoch: 2, MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: 0, FragSize: 1404, FragCount: 1, Payload: []byte{}}},
		{"single", udp.Data{TopicID: 7, Epoch: 9, MsgHeader: udp.MsgHeader{Seq: 5, SendMono: 11, SendClock: -3, Clock: 11, Version: 2, Flags: 3}, MsgLen: 1000, FragSize: 1404, FragCount: 1, Payload: payload}},
		{"last-fragment", udp.Data{TopicID: 7, Epoch: 9, MsgHeader: udp.MsgHeader{Seq: 6}, Retransmit: true, MsgLen: 1256, FragSize: 256, FragIndex: 4, FragCount: 5, Payload: payload[:232]}},
		{"keep-last", udp.Data{TopicID: 7, Epoch: 9, MsgHeader: udp.MsgHeader{Seq: 7}, KeepLast: true, MsgLen: 1000, FragSize: 1404, FragCount: 1, Payload: payload}},
		{"keep-last-retransmit", udp.Data{TopicID: 7, Epoch: 9, MsgHeader: udp.MsgHeader{Seq: 8}, Retransmit: true, KeepLast: true, MsgLen: 1000, FragSize: 1404, FragCount: 1, Payload: payload}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, udp.MaxDatagram)
			n, err := tc.d.MarshalBinaryTo(b)
			if err != nil {
				t.Fatal(err)
			}
			// The vectored form (header only, CRC over the payload in
			// place) is the same datagram, byte for byte.
			h := make([]byte, udp.DataHeaderLen)
			if hn, err := tc.d.MarshalHeaderTo(h); err != nil || hn != n || !bytes.Equal(append(h, tc.d.Payload...), b[:n]) {
				t.Fatalf("MarshalHeaderTo = %d, %v; header ++ payload differs from MarshalBinaryTo's %d bytes", hn, err, n)
			}
			var got udp.Data
			if err := got.UnmarshalBinary(b[:n]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Payload, tc.d.Payload) {
				t.Fatalf("payload differs")
			}
			got.Payload, tc.d.Payload = nil, nil
			if !reflect.DeepEqual(got, tc.d) {
				t.Fatalf("got %+v, want %+v", got, tc.d)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	d := udp.Data{TopicID: 1, Epoch: 1, MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: 4, FragSize: 1404, FragCount: 1, Payload: []byte("abcd")}
	good := make([]byte, 200)
	n, _ := d.MarshalBinaryTo(good)
	good = good[:n]
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:10], udp.ErrShort},
		{"magic", mut(func(b []byte) []byte { b[0] ^= 1; return b }), udp.ErrMagic},
		{"version", mut(func(b []byte) []byte { b[4] = 9; return b }), udp.ErrVersion},
		{"truncated", good[:n-1], udp.ErrLength},
		{"crc", mut(func(b []byte) []byte { b[n-1] ^= 0xFF; return b }), udp.ErrCRC},
		{"crc-header", mut(func(b []byte) []byte { b[9] ^= 0xFF; return b }), udp.ErrCRC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got udp.Data
			if err := got.UnmarshalBinary(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// reseal recomputes length and CRC so field validation (not the CRC) is
// what rejects a datagram.
func reseal(b []byte) []byte {
	b[6], b[7] = byte(len(b)>>8), byte(len(b))
	sum := udp.Checksum(b)
	b[16], b[17], b[18], b[19] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	return b
}

func TestDataFieldValidation(t *testing.T) {
	base := udp.Data{TopicID: 1, Epoch: 1, MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: 600, FragSize: 300, FragIndex: 1, FragCount: 2, Payload: make([]byte, 300)}
	tests := []struct {
		name string
		edit func(d *udp.Data)
	}{
		{"seq0", func(d *udp.Data) { d.Seq = 0 }},
		{"index>=count", func(d *udp.Data) { d.FragIndex = 2 }},
		{"count-mismatch", func(d *udp.Data) { d.FragCount = 3 }},
		{"oversize", func(d *udp.Data) { d.MsgLen = udp.MaxPayload + 1 }},
		{"tiny-fragments", func(d *udp.Data) {
			d.MsgLen, d.FragSize, d.FragCount, d.FragIndex, d.Payload = 20, 10, 2, 0, make([]byte, 10)
		}},
		{"payload-len", func(d *udp.Data) { d.Payload = make([]byte, 299) }},
		{"fragsize0", func(d *udp.Data) { d.FragSize = 0 }},
	}
	// A DATA flag bit no version defines (offset 50, u16) is refused.
	t.Run("unknown-flag", func(t *testing.T) {
		b := make([]byte, udp.MaxDatagram)
		n, err := base.MarshalBinaryTo(b)
		if err != nil {
			t.Fatal(err)
		}
		b[51] |= 1 << 2
		var got udp.Data
		if err := got.UnmarshalBinary(reseal(b[:n])); !errors.Is(err, udp.ErrField) {
			t.Fatalf("err %v, want ErrField", err)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			tc.edit(&d)
			b := make([]byte, udp.MaxDatagram)
			n, err := d.MarshalBinaryTo(b)
			if err != nil {
				t.Fatal(err)
			}
			var got udp.Data
			if err := got.UnmarshalBinary(b[:n]); !errors.Is(err, udp.ErrField) {
				t.Fatalf("err %v, want ErrField", err)
			}
		})
	}
}

func TestBatchRoundTrip(t *testing.T) {
	var w udp.BatchWriter
	buf := make([]byte, 1472)
	w.Reset(buf)
	var want []udp.Record
	for i := 1; ; i++ {
		r := udp.Record{MsgHeader: udp.MsgHeader{Seq: uint64(i), SendMono: int64(i * 10), Clock: 1}, Payload: bytes.Repeat([]byte{byte(i)}, i*7)}
		if !w.Append(&r) {
			break
		}
		want = append(want, r)
	}
	b := w.Finish(3, 4)
	var rd udp.BatchReader
	if err := rd.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if rd.Count != len(want) || len(want) < 3 {
		t.Fatalf("count %d, want %d (≥3)", rd.Count, len(want))
	}
	var r udp.Record
	for i := 0; rd.Next(&r); i++ {
		if r.MsgHeader != want[i].MsgHeader || !bytes.Equal(r.Payload, want[i].Payload) {
			t.Fatalf("record %d: %+v", i, r.MsgHeader)
		}
	}
	if rd.KeepLast {
		t.Fatal("KeepLast set on a batch written without it")
	}
	// The publisher's mode travels in the header's flags (offset 22); a
	// bit no version defines is refused.
	w.KeepLast = true
	w.Reset(buf)
	w.Append(&want[0])
	if err := rd.UnmarshalBinary(w.Finish(3, 4)); err != nil || !rd.KeepLast || rd.Count != 1 {
		t.Fatalf("keep-last batch: err %v, KeepLast %v, count %d; want nil, true, 1", err, rd.KeepLast, rd.Count)
	}
	unknown := append([]byte(nil), b...)
	unknown[23] |= 1 << 1
	if err := rd.UnmarshalBinary(reseal(unknown)); !errors.Is(err, udp.ErrField) {
		t.Fatalf("unknown batch flag: %v", err)
	}
	// A record length pointing past the end is rejected after resealing.
	bad := append([]byte(nil), b...)
	bad[udp.BatchHeaderLen+35] = 0xFF
	if err := rd.UnmarshalBinary(reseal(bad)); !errors.Is(err, udp.ErrField) {
		t.Fatalf("bad record length: %v", err)
	}
}

func TestControlRoundTrip(t *testing.T) {
	b := make([]byte, 2048)
	hb := udp.Heartbeat{TopicID: 1, Epoch: 2, FirstSeq: 3, LastSeq: 9}
	n, _ := hb.MarshalBinaryTo(b)
	var hb2 udp.Heartbeat
	if err := hb2.UnmarshalBinary(b[:n]); err != nil || hb2 != hb {
		t.Fatalf("heartbeat: %v %+v", err, hb2)
	}
	hb.FirstSeq = 11 // > LastSeq+1
	n, _ = hb.MarshalBinaryTo(b)
	if err := hb2.UnmarshalBinary(b[:n]); !errors.Is(err, udp.ErrField) {
		t.Fatalf("inverted heartbeat: %v", err)
	}
	a := udp.AckNack{TopicID: 1, Epoch: 2, Ack: 4, N: 2}
	a.Entries[0] = udp.NackEntry{Seq: 5}
	a.Entries[1] = udp.NackEntry{Seq: 6, FragFirst: 3, FragCount: 2}
	n, _ = a.MarshalBinaryTo(b)
	var a2 udp.AckNack
	if err := a2.UnmarshalBinary(b[:n]); err != nil || !reflect.DeepEqual(a2, a) {
		t.Fatalf("acknack: %v %+v", err, a2)
	}
	var an udp.Announce
	an.NodeEpoch, an.N = 9, 2
	an.SetNode("board-a")
	an.Entries[0] = udp.AnnounceEntry{Role: udp.RoleSubscriber, Port: 7400, Addr: [4]byte{10, 0, 0, 2}}
	an.Entries[0].SetTopic("cam/front")
	an.Entries[1] = udp.AnnounceEntry{Role: udp.RolePublisher, Port: 7401, Epoch: 77}
	an.Entries[1].SetTopic("imu")
	n, err := an.MarshalBinaryTo(b)
	if err != nil || n != an.WireLen() || n != udp.AnnounceHeaderLen+7+2*udp.AnnounceEntryLen+9+3 {
		t.Fatalf("announce encode: %v, %d bytes", err, n)
	}
	var an2 udp.Announce
	if err := an2.UnmarshalBinary(b[:n]); err != nil || an2 != an || an2.Entries[0].TopicName() != "cam/front" || an2.NodeName() != "board-a" {
		t.Fatalf("announce: %v %+v", err, an2.Entries[:2])
	}
	// A topic id that is not the hash of the topic is rejected (a forged
	// or corrupted entry must not steer a publisher to another topic).
	an.Entries[1].TopicID++
	n, _ = an.MarshalBinaryTo(b)
	if err := an2.UnmarshalBinary(b[:n]); !errors.Is(err, udp.ErrField) {
		t.Fatalf("announce with a wrong topic id: %v, want ErrField", err)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic, and a
// datagram that decodes must re-encode to the same bytes.
func FuzzDecode(f *testing.F) {
	b := make([]byte, 4096)
	d := udp.Data{TopicID: 1, Epoch: 1, MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: 300, FragSize: 256, FragIndex: 1, FragCount: 2, Payload: make([]byte, 44)}
	n, _ := d.MarshalBinaryTo(b)
	f.Add(append([]byte(nil), b[:n]...))
	var w udp.BatchWriter
	w.Reset(make([]byte, 512))
	w.Append(&udp.Record{MsgHeader: udp.MsgHeader{Seq: 1}, Payload: []byte("x")})
	w.Append(&udp.Record{MsgHeader: udp.MsgHeader{Seq: 2}, Payload: []byte("yy")})
	f.Add(append([]byte(nil), w.Finish(1, 1)...))
	hb := udp.Heartbeat{TopicID: 1, Epoch: 1, FirstSeq: 1, LastSeq: 1}
	n, _ = hb.MarshalBinaryTo(b)
	f.Add(append([]byte(nil), b[:n]...))
	a := udp.AckNack{TopicID: 1, Epoch: 1, N: 1}
	a.Entries[0] = udp.NackEntry{Seq: 1}
	n, _ = a.MarshalBinaryTo(b)
	f.Add(append([]byte(nil), b[:n]...))
	out := make([]byte, udp.MaxDatagram) // workers run inputs one at a time
	f.Fuzz(func(t *testing.T, in []byte) {
		// Let the fuzzer reach past the CRC: reseal most inputs (a copy:
		// the fuzzer owns in).
		if len(in) >= udp.CommonLen && len(in) <= udp.MaxDatagram && in[0]&1 == 0 {
			in = reseal(append([]byte(nil), in...))
		}
		var d udp.Data
		if d.UnmarshalBinary(in) == nil {
			m, err := d.MarshalBinaryTo(out)
			if err != nil || !bytes.Equal(out[:m], in) {
				t.Fatalf("DATA re-encode differs: %v", err)
			}
		}
		var br udp.BatchReader
		if br.UnmarshalBinary(in) == nil {
			var r udp.Record
			k := 0
			for br.Next(&r) {
				k++
			}
			if k != br.Count {
				t.Fatalf("batch iterated %d of %d", k, br.Count)
			}
		}
		var hb udp.Heartbeat
		if hb.UnmarshalBinary(in) == nil {
			m, _ := hb.MarshalBinaryTo(out)
			if !bytes.Equal(out[:m], in) {
				t.Fatal("HEARTBEAT re-encode differs")
			}
		}
		var a udp.AckNack
		if a.UnmarshalBinary(in) == nil {
			m, _ := a.MarshalBinaryTo(out)
			if !bytes.Equal(out[:m], in) {
				t.Fatal("ACKNACK re-encode differs")
			}
		}
		var an udp.Announce
		if an.UnmarshalBinary(in) == nil {
			m, _ := an.MarshalBinaryTo(out)
			if !bytes.Equal(out[:m], in) {
				t.Fatal("ANNOUNCE re-encode differs")
			}
		}
	})
}

func TestCodecAllocs(t *testing.T) {
	b := make([]byte, 2048)
	p := make([]byte, 1024)
	d := udp.Data{TopicID: 1, Epoch: 1, MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: 1024, FragSize: 1404, FragCount: 1, Payload: p}
	var got udp.Data
	allocs := testing.AllocsPerRun(1000, func() {
		n, _ := d.MarshalBinaryTo(b)
		_ = got.UnmarshalBinary(b[:n])
	})
	if allocs != 0 {
		t.Fatalf("encode+decode: %v allocs/op, want 0", allocs)
	}
}

func BenchmarkCodec(b *testing.B) {
	for _, size := range []int{16, 1024, 1404, 65000} {
		buf := make([]byte, udp.MaxDatagram)
		p := make([]byte, size)
		for i := range p {
			p[i] = byte(i * 31)
		}
		d := udp.Data{TopicID: 1, Epoch: 1, MsgHeader: udp.MsgHeader{Seq: 1}, MsgLen: uint32(size), FragSize: uint32(size), FragCount: 1, Payload: p}
		n, _ := d.MarshalBinaryTo(buf)
		b.Run("op=encode/size="+itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				_, _ = d.MarshalBinaryTo(buf)
			}
		})
		b.Run("op=decode/size="+itoa(size), func(b *testing.B) {
			var got udp.Data
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := got.UnmarshalBinary(buf[:n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
