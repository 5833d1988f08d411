// Package soakrun is the engine of the soak suite: it turns the agents'
// per-endpoint window summaries into one soak window per checkpoint period
// (every board's streams, RSS, CPU, PTP state and events), appends each
// closed window to a crash-safe report/soak checkpoint (one write + fsync
// per window, so a killed controller loses at most the open window),
// restarts endpoints on a churn schedule, prints a progress line every
// minute and answers Ginkgo progress reports on demand.
//
// It reads the rig's endpoints through the small interfaces declared here
// (each checkpoint period soakrun takes the windows that arrived from
// every rig endpoint with rig.Endpoint.TakeWindows; the rig keeps no copy
// and releases finished endpoints, so the controller's memory is constant
// over a 72-hour soak), so the same loop runs on a lab rack, on the sim rack, and on
// the synthetic feed used by the benchmarks and the controller-kill fault.
//
// A device under test's reaction soaks on the same runner: DUTFeed turns
// rounds of dut.Measure into the windows of one stream and reports the
// supervised program's crash-restarts as fault windows (FaultSource).
//
// Helpers return errors; only specs assert.
package soakrun
