// Package testkit holds helpers shared by the module's tests. It is
// imported only from _test.go files.
package testkit

import (
	"testing"
	"time"
)

// PollInterval is how often Until and Eventually re-check their condition.
const PollInterval = time.Millisecond

// Until calls check every PollInterval until it returns nil, and fails the
// test (t.Fatalf, from the calling goroutine) with check's last error if
// that has not happened within d. Polling with a deadline, not sleeping a
// guessed time, is how tests wait for another goroutine or process.
func Until(t testing.TB, d time.Duration, check func() error) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("timed out after %v: %v", d, err)
		}
		time.Sleep(PollInterval)
	}
}

// Eventually is Until for a condition without details: it fails with
// "timed out after d waiting for what".
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(PollInterval)
	}
}
