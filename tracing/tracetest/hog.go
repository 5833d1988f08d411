// Package tracetest induces latency spikes for tests of the tracing
// path: a SCHED_FIFO busy loop named "hlr-hog" on a chosen CPU, run as a
// child process (the test binary re-executed) so the Go scheduler of the
// test stays out of the picture.
//
// A test binary that uses StartHog calls RunHogIfChild first in its
// TestMain.
package tracetest

// HogComm is the hog's thread name, as the kernel trace shows it.
const HogComm = "hlr-hog"

// HogPriority is the hog's SCHED_FIFO priority: above endpoints a test
// runs at FIFO 5, so they wait for it.
const HogPriority = 10
