package gpiocli_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// TestMain fails the run if a test left a simulated chip file behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if left := gpiotest.LeakedChips(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: tests left simulated chip files behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}
