//go:build linux

package udp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hilrig/hilrig/internal/testkit"
	"golang.org/x/sys/unix"
)

// Segmented sends (UDP_SEGMENT) and coalesced reads (UDP_GRO) must be
// invisible above the Socket: the reader gets exactly the datagrams one
// sendmsg each would have delivered, whatever its buffer, and a kernel
// that refuses the offload costs speed, never datagrams.

var loAddr = netip.MustParseAddr("127.0.0.1")

func openLo(t *testing.T, log *slog.Logger) *Socket {
	t.Helper()
	s, err := Open(SocketConfig{Listen: netip.AddrPortFrom(loAddr, 0), RcvBuf: 4 << 20, Timestamps: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// segRun is a run of n datagrams: 8-byte headers numbering them, bodies
// of full bytes each but the last, which has last bytes.
func segRun(n, full, last int) (hdrs []byte, bodies [][]byte, want [][]byte) {
	hdrs = make([]byte, 8*n)
	for i := range n {
		h := hdrs[8*i : 8*i+8]
		copy(h, "seg#")
		h[4], h[5], h[6], h[7] = byte(i), byte(n), 0xa5, 0x5a
		size := full
		if i == n-1 {
			size = last
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		bodies = append(bodies, b)
		want = append(want, append(append([]byte(nil), h...), b...))
	}
	return hdrs, bodies, want
}

// readN reads n datagrams from r into buffers of size bufLen, alternating
// ReadFrom and ReadDirect (both must serve a coalesced read's rest).
func readN(t *testing.T, r *Socket, n, bufLen int) [][]byte {
	t.Helper()
	if err := r.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for i := range n {
		b := make([]byte, bufLen)
		var (
			m   int
			err error
		)
		if i%2 == 0 {
			m, _, _, err = r.ReadFrom(b)
		} else {
			m, _, _, err = r.ReadDirect(b, 5*time.Second)
		}
		if err != nil {
			t.Fatalf("datagram %d of %d: %v", i, n, err)
		}
		got = append(got, b[:m])
	}
	return got
}

func sameDatagrams(t *testing.T, got, want [][]byte) {
	t.Helper()
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("datagram %d: %d bytes %x…, want %d bytes %x…", i, len(got[i]), got[i][:min(12, len(got[i]))], len(want[i]), want[i][:12])
		}
	}
}

func TestWriteSegsDeliversEachDatagram(t *testing.T) {
	for _, bufLen := range []int{MaxDatagram + 1, 2048} {
		snd, rcv := openLo(t, nil), openLo(t, nil)
		hdrs, bodies, want := segRun(5, 1000, 300)
		if err := snd.WriteSegs(hdrs, 8, bodies, rcv.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if snd.noGSO.Load() {
			t.Fatal("the kernel refused UDP_SEGMENT on lo: the segmented path is untested here")
		}
		got := readN(t, rcv, 5, bufLen)
		sameDatagrams(t, got, want)
		// The run arrived as one read, handed out a datagram at a time.
		if rcv.gro.buf != nil && rcv.gro.seg != 1008 {
			t.Errorf("buffer %d: coalesced segment size %d, want 1008 (the run was read datagram by datagram)", bufLen, rcv.gro.seg)
		}
		if rcv.gro.off != rcv.gro.n {
			t.Errorf("buffer %d: %d bytes left in the stash after the run", bufLen, rcv.gro.n-rcv.gro.off)
		}
	}
}

func TestWriteSegsFallsBackWhenRefused(t *testing.T) {
	var logs testkit.SyncBuffer
	snd := openLo(t, slog.New(slog.NewTextHandler(&logs, nil)))
	rcv := openLo(t, nil)
	// SO_NO_CHECK (no UDP checksum) makes the kernel refuse segmentation
	// (EINVAL), as a device without checksum offload does (EIO).
	if err := unix.SetsockoptInt(snd.fd, unix.SOL_SOCKET, unix.SO_NO_CHECK, 1); err != nil {
		t.Fatal(err)
	}
	hdrs, bodies, want := segRun(4, 1200, 1200)
	for round := range 2 {
		if err := snd.WriteSegs(hdrs, 8, bodies, rcv.LocalAddr()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		sameDatagrams(t, readN(t, rcv, 4, MaxDatagram+1), want)
	}
	if !snd.noGSO.Load() {
		t.Error("GSO still on after the kernel refused it")
	}
	if n := strings.Count(logs.String(), "refused UDP segmentation offload"); n != 1 {
		t.Errorf("%d warnings about the refusal, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "sendmsg UDP_SEGMENT: invalid argument") {
		t.Errorf("the warning does not name the errno:\n%s", logs.String())
	}
}

func TestWriteSegsRejectsBadRuns(t *testing.T) {
	snd, rcv := openLo(t, nil), openLo(t, nil)
	hdrs, bodies, _ := segRun(3, 100, 100)
	for name, call := range map[string]func() error{
		"no datagrams":  func() error { return snd.WriteSegs(hdrs, 8, nil, rcv.LocalAddr()) },
		"short headers": func() error { return snd.WriteSegs(hdrs[:20], 8, bodies, rcv.LocalAddr()) },
		"too many": func() error {
			return snd.WriteSegs(make([]byte, 8*(MaxSegs+1)), 8, make([][]byte, MaxSegs+1), rcv.LocalAddr())
		},
	} {
		if err := call(); err == nil || errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: %v, want the run's shape named", name, err)
		}
	}
}

// cmsg appends one control message to oob.
func cmsg(oob []byte, level, typ int32, data []byte) []byte {
	h := make([]byte, cmsgAlign(unix.CmsgLen(len(data))))
	c := (*unix.Cmsghdr)(unsafe.Pointer(&h[0]))
	c.Level, c.Type = level, typ
	c.SetLen(unix.CmsgLen(len(data)))
	copy(h[unix.CmsgLen(0):], data)
	return append(oob, h...)
}

func TestParseCmsgs(t *testing.T) {
	ts := binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 3), 7) // 3 s, 7 ns
	seg := binary.NativeEndian.AppendUint32(nil, 1472)
	both := cmsg(cmsg(nil, unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts), unix.SOL_UDP, unix.UDP_GRO, seg)
	if rx, s := parseCmsgs(both); rx != 3e9+7 || s != 1472 {
		t.Errorf("stamp and segment: rx %d seg %d, want 3000000007 and 1472", rx, s)
	}
	// A length running past the buffer ends the walk with what was found.
	bad := append([]byte(nil), both...)
	(*unix.Cmsghdr)(unsafe.Pointer(&bad[cmsgAlign(unix.CmsgLen(16))])).SetLen(1 << 20)
	if rx, s := parseCmsgs(bad); rx != 3e9+7 || s != 0 {
		t.Errorf("overlong second message: rx %d seg %d, want the stamp and no segment", rx, s)
	}
	if rx, s := parseCmsgs(both[:5]); rx != 0 || s != 0 {
		t.Errorf("truncated header: rx %d seg %d, want nothing", rx, s)
	}
}

// TestReadDirectClosedBeforeStash: the rest of a coalesced read is served
// without the socket's lock, so Close must still win over it: after
// Close, ReadDirect reports net.ErrClosed, not a stashed datagram.
func TestReadDirectClosedBeforeStash(t *testing.T) {
	snd, rcv := openLo(t, nil), openLo(t, nil)
	hdrs, bodies, want := segRun(5, 1000, 300)
	if err := snd.WriteSegs(hdrs, 8, bodies, rcv.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	sameDatagrams(t, readN(t, rcv, 2, MaxDatagram+1), want[:2])
	if rcv.gro.off >= rcv.gro.n {
		t.Fatal("nothing stashed after two of five coalesced datagrams: the run was not coalesced")
	}
	if err := rcv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := rcv.ReadDirect(make([]byte, MaxDatagram+1), time.Second); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadDirect after Close with datagrams stashed: %v, want net.ErrClosed", err)
	}
}
