//go:build unix

package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// protocolStdout keeps the agent protocol's stream for the agent alone: it
// duplicates standard output for the protocol and points file descriptor 1
// at standard error. The peers' C and C++ libraries print to stdout on
// their own — Fast DDS logs warnings there, in colour — and one such line
// in the protocol stream ended a peer agent mid-run ("invalid character
// '\x1b'"); now it lands in the agent's stderr, where the rig keeps it for
// diagnostics.
func protocolStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("hilrig-peer: keep stdout for the agent protocol: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("hilrig-peer: point the libraries' stdout at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "agent-protocol"), nil
}
