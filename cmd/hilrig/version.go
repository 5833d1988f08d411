package main

import "runtime/debug"

// Version reports the module version and VCS revision baked in by the Go
// toolchain; agents and controllers compare it in preflight.
func Version() string {
	v := "hilrig (devel)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
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
	return v
}
