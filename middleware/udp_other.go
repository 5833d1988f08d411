//go:build !linux

package middleware

// threadNetns is 0 off Linux (no network namespaces).
func threadNetns() uint64 { return 0 }
