//go:build !unix

package soakrun

import "time"

// processCPU is 0 off Unix (no getrusage): soak windows then report no
// CPU time rather than a wrong one.
func processCPU() time.Duration { return 0 }
