package scpi

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hilrig/hilrig/scopes"
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

// Every Device_ErrorCode keeps its sentinel and its text, the unnamed
// ones included.
func TestVXIError(t *testing.T) {
	for _, want := range []struct {
		code uint32
		text string
		kind error
	}{
		{1, "VXI-11 syntax error (1)", scopes.ErrInstrument},
		{3, "VXI-11 device not accessible (3)", scopes.ErrInstrument},
		{4, "VXI-11 invalid link identifier (4)", scopes.ErrInstrument},
		{8, "VXI-11 operation not supported (8)", scopes.ErrNotSupported},
		{11, "VXI-11 device locked by another link (11)", scopes.ErrInstrument},
		{15, "VXI-11 I/O timeout (error 15)", scopes.ErrTimeout},
		{17, "VXI-11 I/O error (17)", scopes.ErrInstrument},
		{23, "VXI-11 abort (23)", scopes.ErrInstrument},
		{29, "VXI-11 error 29", scopes.ErrInstrument},
	} {
		err := vxiError(want.code)
		if !errors.Is(err, want.kind) || err.Error() != want.kind.Error()+": "+want.text {
			t.Errorf("vxiError(%d) = %v, want %v: %s", want.code, err, want.kind, want.text)
		}
	}
}
