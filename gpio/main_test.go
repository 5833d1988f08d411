package gpio_test

import (
	"os"
	"testing"

	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// TestMain re-executes itself as the marking process of the cross-process
// test (see crossproc_test.go) and fails the run if a test left a
// simulated chip file behind.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	os.Exit(gpiotest.Main(m))
}
