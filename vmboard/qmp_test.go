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
	for _, step := range []struct{ cmd, want string }{{"", "running"}, {"stop", "paused"}, {"cont", "running"}} {
		if step.cmd != "" {
			if _, err := b.QMP(ctx, step.cmd); err != nil {
				t.Fatal(err)
			}
		}
		if st, err := b.Status(ctx); err != nil || st != step.want {
			t.Fatalf("after %q: status %q, %v; want %s", step.cmd, st, err, step.want)
		}
	}
	if _, err := b.QMP(ctx, "no-such-command"); err == nil {
		t.Error("an unknown QMP command did not fail")
	}
	if _, err := b.QMP(ctx, "quit"); err != nil {
		t.Fatal(err)
	}
	assertReaped(t, <-done)
}
