// Package middleware is hilrig's lightweight eCAL-style publish/subscribe
// bus: static topic contracts, shared-memory rings between processes
// (zero-copy loan, preallocated slots, no allocation on the hot path), an
// intra-process path, and UDP between hosts, all behind one
// Publisher/Subscriber API.
//
// middleware imports nothing of the hilrig harness (gpio, timesync, scopes,
// fixtures, suites, report); the harness imports it.
package middleware
