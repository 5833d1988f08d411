package boardtest_test

import (
	"os"
	"slices"
	"testing"

	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// board returns the harness on the board's gpio-sim chip, or skips outside
// the board.
func board(t *testing.T) *gpiotest.SysfsSim {
	t.Helper()
	if os.Getenv("HILRIG_BOARD") != "1" {
		t.Skip("in-board test: runs inside the virtual board; on the host run HILRIG_VM=1 go test ./vmboard/")
	}
	chip := os.Getenv(gpiotest.EnvChip)
	if chip == "" {
		t.Fatalf("HILRIG_BOARD=1 but %s is empty: /init did not export the gpio-sim chip", gpiotest.EnvChip)
	}
	h, err := gpiotest.OpenSysfsSim(chip)
	if err != nil {
		t.Fatalf("board chip %s: %v", chip, err)
	}
	return h
}

// metric logs a figure in the form the host-side test collects.
func metric(t *testing.T, name string, value float64, unit string) {
	t.Helper()
	t.Logf("METRIC %s %.1f %s", name, value, unit)
}

// quantile returns the q-quantile (0..1) of v (sorted in place).
func quantile(v []int64, q float64) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[int(q*float64(len(v)-1))]
}
