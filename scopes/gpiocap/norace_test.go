//go:build linux && !race

package gpiocap_test

// raceSlackNs is 0 without the race detector (see race_test.go).
const raceSlackNs = 0
