package scopesim_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/scopes"
	"github.com/hilrig/hilrig/scopes/lxi"
	"github.com/hilrig/hilrig/scopes/scopesim"
)

// Measure a delay the way a suite does on a real oscilloscope, against the
// SCPI simulator: CH1 pulses every millisecond, CH2 follows 100 µs later.
// The client speaks the Tek dialect over a loopback socket.
func Example_measure() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gen := scopesim.NewPulseGen(time.Millisecond, 100*time.Microsecond, 0)
	srv, err := scopesim.Start(ctx, scopesim.Config{Dialect: scopesim.Tek,
		Channels: map[int]scopesim.EdgeSource{1: gen.Sender(), 2: gen.Receiver()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	tek, err := lxi.DialTek(ctx, lxi.Options{Addr: srv.Addr(), Timeout: 2 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tek.Close()
	var scope scopes.Scope = tek // what the suites hold: any instrument
	if err := scope.ConfigureDelay(ctx, scopes.DelayConfig{Source: 1, Dest: 2}); err != nil {
		fmt.Println(err)
		return
	}
	if err := scope.ResetStats(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// Accumulate until the instrument has some pulses (polled, bounded by
	// ctx). Right after the reset it has measured nothing: ErrNoResult.
	var st scopes.Stats
	for st.Count.N < 5 {
		if st, err = scope.ReadStats(ctx); err != nil && !errors.Is(err, scopes.ErrNoResult) {
			fmt.Println(err)
			return
		}
		select {
		case <-ctx.Done():
			fmt.Println("no pulses:", ctx.Err())
			return
		case <-time.After(10 * time.Millisecond): // poll interval
		}
	}
	fmt.Printf("mean %.0f µs, min %.0f µs, max %.0f µs\n", st.Mean.V*1e6, st.Min.V*1e6, st.Max.V*1e6)
	// Output: mean 100 µs, min 100 µs, max 100 µs
}
