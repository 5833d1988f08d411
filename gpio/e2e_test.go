package gpio_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// TestMarkWatchPair is the software scope end to end on the simulated
// chip: a sender marks before "publishing", a receiver goroutine marks
// first thing in its "callback", one watch captures both lines, and
// PairEdges yields one positive delay per message.
func TestMarkWatchPair(t *testing.T) {
	sim := gpiotest.NewSim(t, gpiosim.Config{Lines: 2, LineNames: []string{"TX", "RX"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txSpec := gpio.LineSpec{Chip: sim.Chip(), Line: "TX", Consumer: "tx"}
	rxSpec := gpio.LineSpec{Chip: sim.Chip(), Line: "RX", Consumer: "rx"}
	w, err := gpio.Watch(ctx, txSpec, rxSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tx, err := gpio.Open(ctx, txSpec, gpio.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	rx, err := gpio.Open(ctx, rxSpec, gpio.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()

	const n = 200
	bus := make(chan int)
	ack := make(chan error)
	go func() {
		for range bus {
			ack <- rx.Mark() // first thing in the callback
		}
	}()
	for i := range n {
		if err := tx.Mark(); err != nil { // the instant before publishing
			t.Fatal(err)
		}
		bus <- i
		if err := <-ack; err != nil {
			t.Fatal(err)
		}
	}
	close(bus)

	edges := make([]gpio.Edge, 0, 2*n)
	buf := make([]gpio.Edge, 64)
	for len(edges) < 2*n {
		k, err := w.ReadEdges(ctx, buf)
		if err != nil {
			t.Fatalf("after %d edges: %v", len(edges), err)
		}
		edges = append(edges, buf[:k]...)
	}
	s, r := gpio.SplitLines(edges, 0, 1)
	res, err := gpio.PairEdges(s, r, gpio.PairOptions{MaxDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != n || len(res.Unmatched) != 0 || res.Resyncs != 0 {
		t.Fatalf("%d pairs, %d unmatched, %d resyncs; want %d, 0, 0", len(res.Pairs), len(res.Unmatched), res.Resyncs, n)
	}
	for i, p := range res.Pairs {
		if p.Index != uint64(i+1) || p.DelayNs <= 0 || p.Receiver.LineSeqno != p.Index {
			t.Fatalf("pair %d: %+v", i, p)
		}
	}
}
