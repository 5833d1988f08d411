package pmc

import "syscall"

// recvNonblock reads one datagram from the raw socket fd without blocking
// (MSG_DONTWAIT).
func recvNonblock(fd uintptr, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_DONTWAIT)
	return n, err
}
