package scpi

import (
	"encoding/binary"
	"fmt"

	"github.com/hilrig/hilrig/scopes"
)

// XDR (RFC 4506) encoding for the few types VXI-11 uses: unsigned and
// signed 32-bit integers, bool, variable-length opaque and string (length
// then bytes padded to a multiple of four).

type xdrEnc struct{ b []byte }

func (e *xdrEnc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *xdrEnc) opaque(p []byte) {
	e.u32(uint32(len(p)))
	e.b = append(e.b, p...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

type xdrDec struct {
	b   []byte
	err error
}

func (d *xdrDec) u32() uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.err = fmt.Errorf("%w: XDR: short uint32", scopes.ErrGarbage)
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *xdrDec) opaque(max int) []byte {
	n := int(d.u32())
	if d.err != nil {
		return nil
	}
	pad := (4 - n%4) % 4
	if n < 0 || n > max || n+pad > len(d.b) {
		d.err = fmt.Errorf("%w: XDR: opaque length %d (have %d bytes)", scopes.ErrGarbage, n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n+pad:]
	return p
}
