package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/hilrig/hilrig/internal/ddsshm"
)

// shmClean is `hilrig-peer shm-clean SEGMENT...`: the controller runs it
// over SSH on a board after that board's agent ended, with the Fast DDS
// segments the agent listed (agentproto.Started.PeerShm). Each is checked
// (ddsshm.Valid), and removed only if no live process owns it (the _el
// lock Fast DDS holds while it lives). Prints the segments removed.
func shmClean(args []string, stdout io.Writer) error {
	if len(args) > ddsshm.MaxFiles {
		return fmt.Errorf("%d segments, at most %d", len(args), ddsshm.MaxFiles)
	}
	var errs []error
	var ok []string
	for _, a := range args {
		if err := ddsshm.Valid(a); err != nil {
			errs = append(errs, err)
			continue
		}
		ok = append(ok, a)
	}
	removed, err := ddsshm.RemoveZombies(ok)
	for _, r := range removed {
		fmt.Fprintln(stdout, r)
	}
	return errors.Join(append(errs, err)...)
}
