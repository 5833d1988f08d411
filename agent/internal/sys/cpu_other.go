//go:build !linux

package sys

import "os"

// CurrentCPU is unknown off Linux: -1.
func CurrentCPU() int { return -1 }

// Gettid is the process id off Linux (no thread ids).
func Gettid() int { return os.Getpid() }
