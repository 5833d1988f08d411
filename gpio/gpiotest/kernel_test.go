package gpiotest_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	kgpiosim "github.com/warthog618/go-gpiosim"

	"github.com/hilrig/hilrig/gpio/gpiotest"
)

// The real-chip conformance test. In the virtual board (QEMU with the
// kernel's gpio-sim) build the static binary with
//
//	CGO_ENABLED=0 go test -c -o gpiotest.test ./gpio/gpiotest
//
// and run `gpiotest.test -test.run Kernel -gpio.chip=/dev/gpiochip0` (or set
// HILRIG_GPIO_CHIP) naming a gpio-sim chip with at least 8 lines; without
// the flag the test creates its own gpio-sim chip through configfs when it
// can (root, CONFIG_GPIO_SIM, configfs mounted) and skips otherwise.
var chipFlag = flag.String("gpio.chip", os.Getenv(gpiotest.EnvChip),
	"kernel gpio-sim chip for the real-chip conformance test (/dev/gpiochipN or gpiochipN; env HILRIG_GPIO_CHIP)")

// kernelHarness returns a harness on a real chip, or the reason there is none.
func kernelHarness(t *testing.T) (gpiotest.Harness, string) {
	if *chipFlag != "" {
		h, err := gpiotest.OpenSysfsSim(*chipFlag)
		if err != nil {
			// The chip was named explicitly: its absence is a failure, not a skip.
			t.Fatalf("-gpio.chip/HILRIG_GPIO_CHIP=%s: %v", *chipFlag, err)
		}
		return h, ""
	}
	devs, _ := filepath.Glob("/dev/gpiochip*")
	if _, err := os.Stat("/sys/kernel/config/gpio-sim"); err != nil {
		if len(devs) == 0 {
			return nil, "no /dev/gpiochip* and no configfs gpio-sim on this machine (the kernel has no GPIO subsystem): run inside the virtual board with -gpio.chip=/dev/gpiochipN or HILRIG_GPIO_CHIP"
		}
		return nil, fmt.Sprintf("found %v but no -gpio.chip/HILRIG_GPIO_CHIP names a gpio-sim chip, and configfs gpio-sim is not available to create one", devs)
	}
	bank := kgpiosim.NewBank("hilrig-gpiotest", gpiotest.MinLines, kgpiosim.WithNamedLine(0, "L0"))
	sim, err := kgpiosim.NewSim(kgpiosim.WithBank(bank))
	if err != nil {
		return nil, fmt.Sprintf("cannot create a kernel gpio-sim chip through configfs (needs root and CONFIG_GPIO_SIM): %v", err)
	}
	t.Cleanup(sim.Close)
	h, err := gpiotest.OpenSysfsSim(sim.Chips[0].DevPath())
	if err != nil {
		t.Fatalf("gpio-sim chip just created: %v", err)
	}
	return h, ""
}

func TestConformanceKernel(t *testing.T) {
	h, reason := kernelHarness(t)
	if h == nil {
		t.Skip(reason)
	}
	t.Logf("conformance against kernel chip %s (%d lines)", h.Chip(), h.Lines())
	gpiotest.Run(t, h)
}
