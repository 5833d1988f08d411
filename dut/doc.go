// Package dut puts the team's own program in the loop: it starts a rack's
// device under test (fixtures.DUT) on its board through the board's
// deployer, captures its output like a console and restarts it after a
// crash (Program); it feeds the program stimuli on its input at the
// configured rate, takes its responses on its output, matches them
// (echo: the response carries the stimulus's sequence number; next: the
// first response before the deadline) and counts misses, duplicates, late
// and out-of-order answers (Measure, Correlate); on GPIO-wired programs it
// pairs the stimulus and response edges as ground truth (PairEdges). The
// result is one report case (Measurement.Case), judged against the dut's
// bounds.
//
// Clock: every stamp is CLOCK_MONOTONIC of the controller: the stimulus
// just before the rig hands it to the bus (or drives the line), the
// response when the rig takes it. The stimulus and response ends run in
// the controller, so a program on a local or netns board is measured on
// one clock without PTP; a program on another host needs the stimulus
// and response ends on agents (not done yet).
//
// The package imports no rig: the caller passes where the run put the
// rack's things (Placement).
package dut
