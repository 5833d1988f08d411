package lxi_test

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// BenchmarkReadStats measures one full statistics read (five queries on
// Tek) over loopback against the simulator, raw socket versus VXI-11; the
// raw socket is the baseline of the same run.
func BenchmarkReadStats(b *testing.B) {
	srv, err := scopesim.Start(b.Context(), scopesim.Config{Dialect: scopesim.Tek, VXI11: true})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		name string
		o    lxi.Options
	}{
		{"transport=raw", lxi.Options{Addr: srv.Addr(), Timeout: 5 * time.Second}},
		{"transport=vxi11", lxi.Options{Addr: srv.PortmapperAddr(), VXI11: true, Timeout: 5 * time.Second}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tek, err := lxi.DialTek(b.Context(), tc.o)
			if err != nil {
				b.Fatal(err)
			}
			defer tek.Close()
			if err := tek.ConfigureDelay(b.Context(), scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tek.ReadStats(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
