package lxi_test

import (
	"errors"
	"math"
	"testing"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
)

func TestWaveformEdges(t *testing.T) {
	// 0 V = byte 20, 3.3 V = byte 220; 10 ns per sample starting at 1 µs.
	p := lxi.Preamble{Points: 12, XIncrement: 10e-9, XOrigin: 1e-6, YIncrement: 3.3 / 200, YReference: 20}
	data := []byte{20, 21, 19, 20, 120, 220, 219, 221, 220, 120, 20, 20}
	// noise at ±1 LSB around the levels stays inside the hysteresis band
	e := lxi.WaveformEdges(nil, data, p, 1.65, 0.2)
	if len(e) != 2 {
		t.Fatalf("edges %+v, want one rising and one falling", e)
	}
	// 120 is exactly the 1.65 V midpoint: rising crossing at sample 4
	if !e[0].Rising || e[0].TimeNs != 1040 || e[1].Rising || e[1].TimeNs != 1090 {
		t.Fatalf("edges %+v, want rising at 1040 ns and falling at 1090 ns", e)
	}
	// byte 0 is a hole and must not create an edge
	if e := lxi.WaveformEdges(nil, []byte{20, 20, 0, 0, 20, 20}, p, 1.65, 0.2); len(e) != 0 {
		t.Fatalf("holes made edges: %+v", e)
	}
}

func TestParsePreamble(t *testing.T) {
	p, err := lxi.ParsePreamble("+0,+0,+1000,+1,+1.0000000000E-09,-5.0000000000E-07,+0,+1.650000E-02,+0.0E+00,+20")
	if err != nil {
		t.Fatal(err)
	}
	if p.Points != 1000 || p.XIncrement != 1e-9 || p.XOrigin != -5e-7 || p.YReference != 20 {
		t.Fatalf("%+v", p)
	}
	for _, bad := range []string{"1,2,3", "+0,+0,+1000,+1,0,0,0,1,0,0", "a,b,c,d,e,f,g,h,i,j"} {
		if _, err := lxi.ParsePreamble(bad); !errors.Is(err, scopes.ErrGarbage) {
			t.Errorf("ParsePreamble(%q) = %v, want ErrGarbage", bad, err)
		}
	}
}

func FuzzWaveform(f *testing.F) {
	f.Add("+0,+0,+4,+1,+1E-09,+0,+0,+1.65E-02,+0,+20", []byte{20, 220, 20, 220}, 1.65)
	f.Fuzz(func(t *testing.T, pre string, data []byte, th float64) {
		p, err := lxi.ParsePreamble(pre)
		if err != nil || math.IsNaN(th) {
			return
		}
		e := lxi.WaveformEdges(nil, data, p, th, 0)
		for i := 1; i < len(e); i++ {
			if e[i].Rising == e[i-1].Rising {
				t.Fatalf("edges do not alternate: %+v", e)
			}
		}
	})
}
