package rig_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/hilrig/hilrig/deploy/deploytest"
)

// hilrigBin is the agent binary built once for this test run.
var hilrigBin, buildCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hilrig-rig-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildCache = dir
	hilrigBin, _, err = deploytest.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the agent binary for the rig tests:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
