package shm_test

import (
	"os"
	"testing"

	"github.com/hilrig/hilrig/middleware/internal/shm"
)

// ParseHeader decodes untrusted files from /dev/shm: it must never panic
// and must accept only headers whose geometry fits the file.
func FuzzParseHeader(f *testing.F) {
	p := shm.Params{Topic: "fuzz", MaxPayload: 100, RingLen: 3}
	r, _, err := shm.NewAnon(p, os.Getpid(), 0, false)
	if err != nil {
		f.Fatal(err)
	}
	good := append([]byte(nil), r.Mem()[:p.Geometry().SlotsOff]...)
	shm.FreeAnon(r)
	f.Add(good, int64(p.Geometry().TotalSize))
	f.Add(good[:100], int64(100))
	f.Add([]byte{}, int64(0))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		hi, err := shm.ParseHeader(b, size, "fuzz")
		if err == nil && int64(hi.TotalSize) > size {
			t.Fatalf("accepted a header needing %d bytes in a %d-byte file", hi.TotalSize, size)
		}
	})
}
