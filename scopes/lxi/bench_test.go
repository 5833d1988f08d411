package lxi_test

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// BenchmarkReadStats measures one full statistics read (on Tek: the
// acquisition state, stop, five statistics, restart — nine round trips)
// over loopback against the simulator, raw socket versus VXI-11; the raw
// socket is the baseline of the same run.
func BenchmarkReadStats(b *testing.B) {
	ch1, ch2 := scopesim.NewMemSource(), scopesim.NewMemSource()
	snd, rcv := scopesim.Pulses(2, 1000, 100_000, 100, func(int) int64 { return 5000 })
	ch1.Push(snd...)
	ch2.Push(rcv...)
	srv, err := scopesim.Start(b.Context(), scopesim.Config{Dialect: scopesim.Tek, VXI11: true,
		Channels: map[int]scopesim.EdgeSource{1: ch1, 2: ch2}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for deadline := time.Now().Add(5 * time.Second); srv.EdgeCount(2) < len(rcv); {
		if time.Now().After(deadline) {
			b.Fatal("simulator never ingested the pulses")
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
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
