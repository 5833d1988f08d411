//go:build unix

package faultkit_test

import (
	"testing"

	"github.com/hilrig/hilrig/suites/internal/faultkit"
)

func TestPatternDetectsTornMessages(t *testing.T) {
	a, b := make([]byte, 256), make([]byte, 256)
	faultkit.Fill(a, 41)
	faultkit.Fill(b, 42)
	if seq, ok := faultkit.Check(a); !ok || seq != 41 {
		t.Fatalf("Check(Fill(41)) = %d, %v", seq, ok)
	}
	for cut := 8; cut < len(a); cut += 7 {
		torn := append(append([]byte(nil), a[:cut]...), b[cut:]...)
		if _, ok := faultkit.Check(torn); ok {
			t.Fatalf("a mix of messages 41 and 42 cut at %d passes the check", cut)
		}
	}
	if _, ok := faultkit.Check(a[:7]); ok {
		t.Fatal("a 7-byte payload passes")
	}
}

func TestFillDoesNotAllocate(t *testing.T) {
	b := make([]byte, 1024)
	if n := testing.AllocsPerRun(100, func() { faultkit.Fill(b, 7) }); n != 0 {
		t.Fatalf("Fill allocates %.0f", n)
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 39})
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, ok := faultkit.Check(b)
		if ok {
			c := make([]byte, len(b))
			faultkit.Fill(c, seq)
			if string(c) != string(b) {
				t.Fatalf("Check accepted %x, which is not Fill(%d)", b, seq)
			}
		}
	})
}
