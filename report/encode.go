package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"reflect"
	"sync"
	"unsafe"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The HDR V2 encoding, written with reused buffers. hdrhistogram-go's
// Encode builds a fresh BestCompression zlib writer and several growing
// buffers per call — about 820 KB and 0.65 ms per window histogram, which
// an agent with 10 subscribers pays 40 times a second on the very board it
// measures. This writes byte-compatible V2 (same cookies, header, ZigZag
// LEB128 counts with zero runs; zlib level may differ, which decoders do not
// see) from one reused state: after warm-up an encode allocates only its
// result.

// V2 cookies, with the 0x10 word-size flag hdrhistogram-go and Java write.
const (
	v2EncodingCookie           = 0x1c849303 | 0x10
	v2CompressedEncodingCookie = 0x1c849304 | 0x10
	v2HeaderLen                = 40
)

// countsField is the byte offset of hdr.Histogram's unexported counts
// slice, found once by reflection; ok is false if a future version renamed
// or retyped it, and the encoder then copies the counts with Export.
var countsField = func() (off uintptr, ok bool) {
	f, found := reflect.TypeFor[hdr.Histogram]().FieldByName("counts")
	if !found || f.Type != reflect.TypeFor[[]int64]() {
		return 0, false
	}
	return f.Offset, true
}

var countsOffset, countsDirect = countsField()

// countsOf returns h's counts array without copying when the layout is
// known. Read-only: the caller holds the histogram's lock.
func countsOf(h *hdr.Histogram) []int64 {
	if countsDirect {
		return *(*[]int64)(unsafe.Add(unsafe.Pointer(h), countsOffset))
	}
	return h.Export().Counts
}

type v2Encoder struct {
	raw []byte       // header + counts payload
	z   bytes.Buffer // compressed, after the 8-byte outer header
	zw  *zlib.Writer
}

// v2Shared is the process's one encoder, behind a lock. Its zlib state is
// 1.2 MB (compress/flate's compressor), allocated by the first encode and
// kept. A sync.Pool kept one per P that had ever encoded, created whenever
// the encoding goroutine ran on a new P — in an agent after the live-heap
// baseline its endpoints take at start, so the fanout suite read 2.4 MB of
// encoders as heap growth. Encodes come per window, milliseconds apart
// (one takes tens of µs): serialising them costs less than a second
// compressor. Agents call it before that baseline through WarmEncoder.
var v2Shared struct {
	sync.Mutex
	e v2Encoder
}

// WarmEncoder allocates the process's histogram encoder state (1.2 MB,
// kept for the life of the process) if no encode has yet, so a live-heap
// baseline read after it already holds that state. Safe for concurrent
// use; blocks while another goroutine encodes.
func WarmEncoder() {
	v2Shared.Lock()
	warm := v2Shared.e.zw != nil
	v2Shared.Unlock()
	if !warm {
		_, _ = NewHistogram().AppendText(nil)
	}
}

// appendV2 appends h's V2 compressed, base64 form to dst.
func appendV2(dst []byte, h *hdr.Histogram) ([]byte, error) {
	v2Shared.Lock()
	defer v2Shared.Unlock()
	e := &v2Shared.e
	counts := countsOf(h)
	limit := len(counts)
	for limit > 1 && counts[limit-1] == 0 {
		limit--
	}
	limit = min(limit, len(counts))
	raw := e.raw[:0]
	raw = binary.BigEndian.AppendUint32(raw, v2EncodingCookie)
	raw = binary.BigEndian.AppendUint32(raw, 0) // payload length, below
	raw = binary.BigEndian.AppendUint32(raw, 0) // normalizing index offset: counts are unrotated
	raw = binary.BigEndian.AppendUint32(raw, uint32(h.SignificantFigures()))
	raw = binary.BigEndian.AppendUint64(raw, uint64(h.LowestTrackableValue()))
	raw = binary.BigEndian.AppendUint64(raw, uint64(h.HighestTrackableValue()))
	raw = binary.BigEndian.AppendUint64(raw, math.Float64bits(1))
	for i := 0; i < limit; {
		c := counts[i]
		i++
		if c == 0 {
			zeros := int64(1)
			for i < limit && counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				c = -zeros // a run of zeros is a negative count
			}
		}
		raw = appendZigZag(raw, c)
	}
	binary.BigEndian.PutUint32(raw[4:], uint32(len(raw)-v2HeaderLen))
	e.raw = raw

	e.z.Reset()
	if e.zw == nil {
		zw, err := zlib.NewWriterLevel(&e.z, zlib.BestSpeed)
		if err != nil {
			return dst, err
		}
		e.zw = zw
	} else {
		e.zw.Reset(&e.z)
	}
	if _, err := e.zw.Write(raw); err != nil {
		return dst, err
	}
	if err := e.zw.Close(); err != nil {
		return dst, err
	}
	var outer [8]byte
	binary.BigEndian.PutUint32(outer[0:], v2CompressedEncodingCookie)
	binary.BigEndian.PutUint32(outer[4:], uint32(e.z.Len()))
	// base64 of outer+compressed without joining them: 8 bytes is not a
	// multiple of 3, so encode through a small staging copy of the seam.
	n := 8 + e.z.Len()
	out := slicesGrow(dst, base64.StdEncoding.EncodedLen(n))
	enc := out[len(dst):cap(out)][:base64.StdEncoding.EncodedLen(n)]
	zb := e.z.Bytes()
	var seam [9]byte // outer + first byte of the compressed stream
	copy(seam[:], outer[:])
	seam[8] = zb[0]
	base64.StdEncoding.Encode(enc[:12], seam[:])
	base64.StdEncoding.Encode(enc[12:], zb[1:])
	return out[:len(dst)+len(enc)], nil
}

func slicesGrow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// appendZigZag appends v as ZigZag LEB128 (at most 9 bytes, the ninth
// carrying 8 bits), the V2 counts encoding.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64((v << 1) ^ (v >> 63))
	for i := 0; i < 8; i++ {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(b, byte(u))
}
