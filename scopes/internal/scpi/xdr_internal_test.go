package scpi

import (
	"bytes"
	"testing"
)

// FuzzRecordAndXDR feeds arbitrary bytes to the RPC record reader and the
// XDR decoder used on VXI-11 replies; neither may panic or over-allocate.
func FuzzRecordAndXDR(f *testing.F) {
	f.Add([]byte{0x80, 0, 0, 8, 0, 0, 0, 3, 'a', 'b', 'c', 0})
	f.Add([]byte{0, 0, 0, 4, 1, 2, 3, 4, 0x80, 0, 0, 4, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := readRecord(bytes.NewReader(b))
		if err != nil {
			rec = b
		}
		d := xdrDec{b: rec}
		d.u32()
		d.opaque(1 << 20)
		d.u32()
	})
}
