package gpiotest_test

import (
	"os"
	"testing"

	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// TestMain fails the run if a test left a simulated chip file behind.
func TestMain(m *testing.M) {
	os.Exit(gpiotest.Main(m))
}
