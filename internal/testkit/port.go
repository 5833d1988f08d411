package testkit

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server started by another process (Prometheus, PostgreSQL) that takes
// its port on the command line. The port is released before return, so
// another process may take it first; a test that can pass a listener
// should pass one instead.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
