package main

import (
	"runtime"
	"strings"
	"testing"
)

// `hilrig version` names the platform the binary was built for: a
// deployer (and a person on a board) can tell an arm64 build from an
// amd64 one.
func TestVersionReportsGOARCH(t *testing.T) {
	v := Version()
	if want := " " + runtime.GOOS + "/" + runtime.GOARCH; !strings.HasSuffix(v, want) {
		t.Fatalf("Version() = %q, want it to end with %q", v, want)
	}
}
