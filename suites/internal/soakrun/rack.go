package soakrun

import (
	"slices"

	"github.com/hilrig/hilrig/fixtures"
)

// WithoutMarkers returns a copy of rack for runs that use no marker lines
// and no instruments (soak traffic, most faults): boards lose their marker
// and capture lines, the instruments and the scope capability go. Opening
// the copy makes no simulated GPIO chip, so such a rig can run while
// another rig of the sim rack holds the machine-wide sim chip "hilrig"
// (the rig names sim chips after the fixture, so two rigs collide).
// rack is not modified.
func WithoutMarkers(rack *fixtures.Rack) *fixtures.Rack {
	c := *rack
	c.Boards = slices.Clone(rack.Boards)
	for i := range c.Boards {
		c.Boards[i].Markers, c.Boards[i].Captures = nil, nil
	}
	c.Instruments = fixtures.Instruments{}
	c.Capabilities = slices.DeleteFunc(slices.Clone(rack.Capabilities), func(x fixtures.Capability) bool {
		return x == fixtures.CapScope || x == fixtures.CapHardwareGPIO
	})
	return &c
}
