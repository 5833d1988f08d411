//go:build linux && race

package gpiocap_test

// raceSlackNs widens the feed's slack under the race detector, whose
// instrumentation makes Mark (and so the shortest delay the feed can
// make) ≈ 10 µs.
const raceSlackNs = 15_000
