package vmboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/hilrig/hilrig/vmboard"
)

// TestVMQMPPowerControl: through QMP the board is frozen (stop, as a
// SIGSTOPped QEMU would be, but observable), thawed, and switched off
// (quit); QEMU is reaped afterwards.
func TestVMQMPPowerControl(t *testing.T) {
	im := image(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := &hangWatcher{marker: "hilrig-test: up", cancel: func() {}, seen: make(chan struct{})}
	b, err := vmboard.Start(ctx, im, vmboard.RunOptions{
		Init:    []byte("#!/bin/busybox sh\necho hilrig-test: up\nexec /bin/busybox sleep 1000000\n"),
		Console: w,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Wait follows the console (it feeds w) until QEMU exits: run it from
	// the start, or the marker is never seen.
	done := make(chan *vmboard.Result, 1)
	go func() {
		res, _ := b.Wait() // how the run ended is the board's business; it ended
		done <- res
	}()
	select {
	case <-w.seen:
	case <-ctx.Done():
		b.Kill()
		<-done
		t.Fatal("the board never came up")
	}
	vmboard.DriveQMP(t, ctx, b, "running", "stop", "paused", "cont", "running")
	assertReaped(t, <-done)
}
