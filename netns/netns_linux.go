package netns

import (
	"os"

	"golang.org/x/sys/unix"
)

// osAvailable: Linux has network namespaces; Available checks the rest.
func osAvailable() error { return nil }

// setns moves the calling OS thread into the network namespace f.
func setns(f *os.File) error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }
