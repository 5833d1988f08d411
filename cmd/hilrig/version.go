package main

import (
	"runtime"
	"runtime/debug"
)

// Version reports the module version and VCS revision baked in by the Go
// toolchain, and the GOOS/GOARCH the binary was built for (so the binary
// a deployer shipped to a board says which CPU it is for); agents and
// controllers compare it in preflight.
func Version() string {
	v := "hilrig (devel)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v + " " + runtime.GOOS + "/" + runtime.GOARCH
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = "hilrig " + bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "+dirty"
		}
	}
	return v + " " + runtime.GOOS + "/" + runtime.GOARCH
}
