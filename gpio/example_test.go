package gpio_test

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/gpio/gpiosim"
)

// A sender marks on one simulated line and a watcher, as the simulated
// scope does, reads the edges. In the sim rack the marker and the watcher
// live in different processes; only the chip name is shared.
func ExampleWatch() {
	name := "example-" + strconv.Itoa(os.Getpid())
	chip, err := gpiosim.Create(name, gpiosim.Config{Lines: 2, LineNames: []string{"TX", "RX"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer chip.Remove()
	ctx := context.Background()

	tx := gpio.LineSpec{Chip: gpio.SimChip(name), Line: "TX", Consumer: "sender"}
	w, err := gpio.Watch(ctx, tx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	m, err := gpio.Open(ctx, tx, gpio.Mode{}) // toggle: one edge per message
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for range 3 {
		m.Mark() // the instant before publishing
	}

	var e gpio.Edge
	for range 3 {
		if err := w.ReadEdge(ctx, &e); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.Line, e.Rising, e.LineSeqno, e.Clock)
	}
	// Output:
	// 0 true 1 monotonic
	// 0 false 2 monotonic
	// 0 true 3 monotonic
}
