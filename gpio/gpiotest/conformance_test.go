package gpiotest_test

import (
	"testing"

	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/gpiotest"
)

func TestConformanceSim(t *testing.T) {
	gpiotest.Run(t, gpiotest.NewSim(t, gpiosim.Config{}))
}
