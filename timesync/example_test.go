package timesync_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hilrig/hilrig/timesync"
	"github.com/hilrig/hilrig/timesync/timesyncsim"
)

// A Monitor polls each board's ptp4l and reports lock transitions. Here
// the board is a simulated ptp4l: locked at first, then its offset from
// the master grows past the bound.
func ExampleMonitor() {
	board := timesyncsim.New(nil)
	m, err := timesync.NewMonitor([]timesync.Board{{Name: "board-a", Source: board}},
		timesync.MonitorConfig{Period: 5 * time.Millisecond, Bound: time.Microsecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer m.Stop()

	next := func() {
		select {
		case e := <-m.Events():
			fmt.Println(e.Board, e.Kind)
		case <-ctx.Done():
			fmt.Println("no event:", ctx.Err())
		}
	}
	next()
	board.Update(func(s *timesyncsim.State) { s.Offset = 50_000 }) // 50 µs off the master
	next()
	// Output:
	// board-a locked
	// board-a lock-lost
}
