// Command gpioecho is the example device under test (c) of the sim rack:
// GPIO only. On every edge of its input line it toggles its output line
// -delay after the input edge (timed from the edge's own stamp, so the
// delay on the wire is the configured one plus the output's write), as
// firmware answering an interrupt would.
//
// The rig passes its lines in the environment (docs/dut.md):
// HILRIG_IN_CHIP/_LINE and HILRIG_OUT_CHIP/_LINE.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hilrig/hilrig/gpio"
)

func main() {
	delay := flag.Duration("delay", 200*time.Microsecond, "input edge → output edge")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *delay); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "dut gpioecho:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, delay time.Duration) error {
	in := gpio.LineSpec{Chip: gpio.Chip(os.Getenv("HILRIG_IN_CHIP")), Line: os.Getenv("HILRIG_IN_LINE")}
	out := gpio.LineSpec{Chip: gpio.Chip(os.Getenv("HILRIG_OUT_CHIP")), Line: os.Getenv("HILRIG_OUT_LINE"), Consumer: "dut-gpioecho"}
	if in.Chip == "" || out.Chip == "" {
		return errors.New("HILRIG_IN_CHIP/_LINE and HILRIG_OUT_CHIP/_LINE must name the lines")
	}
	w, err := gpio.Watch(ctx, in)
	if err != nil {
		return err
	}
	defer w.Close()
	o, err := gpio.Open(ctx, out, gpio.Mode{})
	if err != nil {
		return err
	}
	defer o.Close()
	fmt.Printf("dut gpioecho: %s → %s after %s\n", in, out, delay)
	var e gpio.Edge
	for {
		if err := w.ReadEdge(ctx, &e); err != nil && !errors.Is(err, gpio.ErrOverflow) {
			return err
		}
		// The delay counts from the edge on the wire, not from when this
		// process woke up: sleep the bulk, spin the rest.
		at := e.TimestampNs + int64(delay)
		if d := time.Duration(at - gpio.MonotonicNs()); d > 200*time.Microsecond {
			time.Sleep(d - 100*time.Microsecond)
		}
		for gpio.MonotonicNs() < at {
		}
		if err := o.Mark(); err != nil {
			return err
		}
	}
}
