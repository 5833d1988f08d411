package gpiocli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio/gpiocli"
	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
	"github.com/hilrig/hilrig/internal/testkit"
)

func TestMarkWatchLs(t *testing.T) {
	sim := gpiotest.NewSim(t, gpiosim.Config{Lines: 2, LineNames: []string{"TX", "RX"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var wout, werr testkit.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- gpiocli.Run(ctx, []string{"watch", "--chip", sim.Chip().String(), "--line", "TX", "--count", "4"}, &wout, &werr)
	}()
	// The watch announces itself on stderr once it is capturing.
	testkit.Until(t, 10*time.Second, func() error {
		if s := werr.String(); !strings.Contains(s, "watching") {
			return fmt.Errorf("watch did not start: %q", s)
		}
		return nil
	})
	var out, errb bytes.Buffer
	if err := gpiocli.Run(ctx, []string{"mark", "--chip", sim.Chip().String(), "--line", "TX", "--rate", "0", "--count", "4", "--consumer", "cli-tx"}, &out, &errb); err != nil {
		t.Fatalf("mark: %v (%s)", err, errb.String())
	}
	if !strings.Contains(out.String(), "4 marks, 4 edges") {
		t.Fatalf("mark output %q", out.String())
	}
	if err := <-done; err != nil {
		t.Fatalf("watch: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(wout.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "rising  line 0 seq 1/1 (monotonic)") || !strings.Contains(lines[3], "falling line 0 seq 4/4") {
		t.Fatalf("watch output:\n%s", wout.String())
	}

	// ls shows the holder while a marker holds the line.
	sim.C.SetLineBusy(1, "phantom")
	out.Reset()
	if err := gpiocli.Run(ctx, []string{"ls"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), sim.Chip().String()) || !strings.Contains(out.String(), `"RX"`) || !strings.Contains(out.String(), `"phantom"`) {
		t.Fatalf("ls output:\n%s", out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil, {"bogus"}, {"mark"}, {"mark", "--chip", "sim:x"}, {"mark", "--chip", "sim:x", "--line", "0", "--mode", "blink"},
		{"mark", "--chip", "sim:x", "--line", "0", "--rate", "-1"}, {"watch", "--chip", "sim:x"},
		{"watch", "--chip", "sim:x", "--line", "0", "--clock", "tai"}, {"sim"}, {"sim", "frob", "x"}, {"ls", "extra"},
	} {
		var out, errb bytes.Buffer
		err := gpiocli.Run(context.Background(), args, &out, &errb)
		if !errors.Is(err, gpiocli.ErrUsage) {
			t.Errorf("%q: err = %v, want ErrUsage", args, err)
		}
	}
}
