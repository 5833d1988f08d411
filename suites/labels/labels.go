// Package labels is the closed Ginkgo label vocabulary of hilrig's suites.
// Specs use only these constants; Validate rejects anything else so a typo
// in a label filter or a spec cannot silently select nothing, and
// harness.RunSuite fails, at suite start, every spec (run or filtered out)
// whose labels are outside it.
package labels

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hilrig/hilrig/fixtures"
)

// Kinds of spec.
const (
	Latency    = "latency"
	Throughput = "throughput"
	Soak       = "soak"
	Faults     = "faults"
	Smoke      = "smoke"
	// Reaction: a device under test's stimulus → response (suites/reaction).
	Reaction = "reaction"
	// Replay: a recording (MCAP) carried as load over every middleware
	// (suites/replay).
	Replay = "replay"
)

// Resources a spec needs; a rack claims them as capabilities. A spec
// labelled needs:X is skipped (with the reason stated) on a rack that does
// not claim X, and fails on a rack that claims X when X does not work.
// The labels and the capability each needs are fixtures' table (the rack
// model derives its label filter from it).
const (
	NeedsScope     = fixtures.LabelNeedsScope
	NeedsPTP       = fixtures.LabelNeedsPTP
	NeedsHardware  = fixtures.LabelNeedsHardware
	NeedsMultiHost = fixtures.LabelNeedsMultiHost
)

// all is the frozen vocabulary: the kinds, then every needs:X label.
var all = append([]string{Latency, Throughput, Soak, Faults, Smoke, Reaction, Replay}, fixtures.NeedsLabels()...)

// All returns a copy of the vocabulary.
func All() []string { return slices.Clone(all) }

// Validate returns an error naming every label that is not in the vocabulary.
func Validate(ls ...string) error {
	var bad []string
	for _, l := range ls {
		if !slices.Contains(all, l) {
			bad = append(bad, l)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("labels: %s not in the vocabulary (%s)", strings.Join(bad, ", "), strings.Join(all, ", "))
	}
	return nil
}

// Capability maps a needs:X label to the name of the rack capability it
// needs (fixtures.NeedsLabelCapability: needs:hardware needs
// hardware-gpio).
func Capability(label string) (string, bool) {
	c, ok := fixtures.NeedsLabelCapability(label)
	return string(c), ok
}
