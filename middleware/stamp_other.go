//go:build !linux

package middleware

// clockGettime reads 0 off Linux for clocks other than realtime and
// monotonic (CLOCK_TAI is a Linux clock), as on Linux when the kernel
// refuses the id. Publishing fails off Linux anyway (no transport opens).
func clockGettime(id int32) int64 { return 0 }
