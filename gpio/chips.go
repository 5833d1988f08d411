package gpio

import (
	"context"

	"github.com/hilrig/hilrig/gpio/gpiosim"
	"github.com/hilrig/hilrig/gpio/internal/cdev"
	"github.com/hilrig/hilrig/gpio/internal/core"
)

type coreRequest = core.Request

// Chips lists the real GPIO chips (/dev/gpiochip*) and the simulated chips
// with their lines, holders and directions, like gpioinfo. A chip that
// cannot be opened is listed with the error text as its label.
func Chips(ctx context.Context) ([]ChipInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := cdev.Chips()
	names, err := gpiosim.List("")
	if err != nil {
		return out, err
	}
	for _, n := range names {
		c, err := gpiosim.Open(n)
		if err != nil {
			out = append(out, ChipInfo{Name: SimChip(n).String(), Path: gpiosim.Path("", n), Label: err.Error()})
			continue
		}
		out = append(out, c.Info())
		c.Close()
	}
	return out, nil
}
