// Package labels is the closed Ginkgo label vocabulary of hilrig's suites.
// Specs use only these constants; Validate rejects anything else so a typo
// in a label filter or a spec cannot silently select nothing.
package labels

import (
	"fmt"
	"slices"
	"strings"
)

// Kinds of spec.
const (
	Latency    = "latency"
	Throughput = "throughput"
	Soak       = "soak"
	Faults     = "faults"
	Smoke      = "smoke"
)

// Resources a spec needs; a rack claims them as capabilities. A spec
// labelled needs:X is skipped (with the reason stated) on a rack that does
// not claim X, and fails on a rack that claims X when X does not work.
const (
	NeedsScope     = "needs:scope"
	NeedsPTP       = "needs:ptp"
	NeedsHardware  = "needs:hardware"
	NeedsMultiHost = "needs:multi-host"
)

// All is the frozen vocabulary.
var all = []string{Latency, Throughput, Soak, Faults, Smoke, NeedsScope, NeedsPTP, NeedsHardware, NeedsMultiHost}

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

// Capability maps a needs:X label to the rack capability name X.
func Capability(label string) (string, bool) {
	return strings.CutPrefix(label, "needs:")
}
