package power

import (
	"context"
	"strconv"

	"github.com/hilrig/hilrig/fixtures"
	"github.com/hilrig/hilrig/gpio"
)

// relay drives a relay from a controller GPIO line. The line is requested
// on first use and held until Close: releasing a cdev line leaves its
// level to the kernel, so the switch keeps it for the controller's life.
type relay struct {
	line  fixtures.RelayLine
	out   *gpio.Output
	state State
}

func (r *relay) set(ctx context.Context, on bool) error {
	if r.out == nil {
		o, err := gpio.Open(ctx, gpio.LineSpec{Chip: r.line.Chip, Line: strconv.Itoa(r.line.Offset),
			ActiveLow: r.line.ActiveLow, Consumer: "hilrig-power"}, gpio.Mode{})
		if err != nil {
			return err
		}
		r.out = o
	}
	if err := r.out.Set(on); err != nil {
		return err
	}
	r.state = Off
	if on {
		r.state = On
	}
	return nil
}

// status is the level this switch drove (Unknown before the first
// operation: reading a line back would request it as an input and change
// what drives the relay).
func (r *relay) status(context.Context) (State, error) { return r.state, nil }

func (r *relay) close() error {
	if r.out == nil {
		return nil
	}
	err := r.out.Close()
	r.out = nil
	return err
}
