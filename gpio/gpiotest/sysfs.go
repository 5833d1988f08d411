package gpiotest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hilrig/hilrig/gpio"
	"github.com/hilrig/hilrig/internal/kind"
)

// EnvChip names the environment variable that points real-chip tests and
// benchmarks at a kernel gpio-sim chip (/dev/gpiochipN).
const EnvChip = "HILRIG_GPIO_CHIP"

// SysfsSim drives a kernel gpio-sim chip through its sysfs attributes:
// sim_gpioK/pull (write pull-up/pull-down) and sim_gpioK/value (read).
type SysfsSim struct {
	dev   string // /dev/gpiochipN
	dir   string // /sys/devices/platform/gpio-sim.M/gpiochipN
	lines int
	names map[int]string
}

// OpenSysfsSim returns a harness on the kernel gpio-sim chip named chip
// (/dev/gpiochipN or gpiochipN), or an error saying why chip is not one.
func OpenSysfsSim(chip string) (*SysfsSim, error) {
	name := filepath.Base(chip)
	dir, err := filepath.EvalSymlinks("/sys/bus/gpio/devices/" + name)
	if err != nil {
		return nil, fmt.Errorf("chip %s: no /sys/bus/gpio/devices/%s: %v", chip, name, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sim_gpio0", "pull")); err != nil {
		return nil, fmt.Errorf("chip %s is not a gpio-sim chip (%s/sim_gpio0/pull missing): the conformance harness needs the simulator's pull/value attributes to play the wiring", chip, dir)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "sim_gpio*"))
	s := &SysfsSim{dev: "/dev/" + name, dir: dir, lines: len(m), names: map[int]string{}}
	chips, _ := gpio.Chips(context.Background())
	for _, c := range chips {
		if c.Name == name {
			for _, l := range c.Lines {
				s.names[l.Offset] = l.Name
			}
		}
	}
	return s, nil
}

// Chip implements Harness.
func (s *SysfsSim) Chip() kind.Chip { return kind.Chip(s.dev) }

// Lines implements Harness.
func (s *SysfsSim) Lines() int { return s.lines }

// LineName implements Harness.
func (s *SysfsSim) LineName(o int) string {
	return s.names[o]
}

// Pull implements Harness: writes pull-up/pull-down to sim_gpioK/pull.
func (s *SysfsSim) Pull(o int, high bool) error {
	v := "pull-down"
	if high {
		v = "pull-up"
	}
	return os.WriteFile(filepath.Join(s.dir, "sim_gpio"+strconv.Itoa(o), "pull"), []byte(v), 0)
}

// Level implements Harness: reads sim_gpioK/value.
func (s *SysfsSim) Level(o int) (bool, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "sim_gpio"+strconv.Itoa(o), "value"))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

var _ Harness = (*SysfsSim)(nil)
