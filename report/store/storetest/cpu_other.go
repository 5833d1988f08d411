//go:build !unix

package storetest

import "time"

// cpuTime is not measured on this platform (0: the cpu-ms metric reads 0).
func cpuTime() time.Duration { return 0 }
