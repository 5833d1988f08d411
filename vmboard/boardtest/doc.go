// Package boardtest holds the tests that run inside the virtual board
// (vmboard), against the real kernel: the gpio package on the
// kernel's gpio-sim chip through the GPIO character device, and the
// simulated PTP clock (ptp-sim) through facebook/time's phc package.
//
// They are compiled on the host as a static test binary
// (CGO_ENABLED=0 go test -c) and run by /init inside the board, which sets
// HILRIG_BOARD=1 and HILRIG_GPIO_CHIP; elsewhere they skip. Run them with
//
//	HILRIG_VM=1 go test -count=1 ./vmboard/
//
// Lines of the board's chip used here: 8 marker, 9 edges, 10 busy. Figures
// are logged as "METRIC <name> <value> <unit>" lines; inside a TCG board
// they are an emulator's timings, not hardware's.
package boardtest
