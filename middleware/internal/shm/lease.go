package shm

import "sync"

// Liveness.
//
// Every endpoint of a ring holds a lease on one byte of the segment file:
// the publisher on byte offPubOwner, the subscriber of table entry i on
// byte sub(i)+subState. A file lease is an open file description (OFD)
// write lock, fcntl(F_OFD_SETLK), taken through a file descriptor the
// endpoint opens for itself. The kernel drops the lock when the last
// descriptor of that description closes, which happens when the process
// dies however it dies (SIGKILL included). An endpoint is alive exactly
// while some process holds its byte: fcntl(F_OFD_GETLK) on a descriptor
// that holds no byte locks says so.
//
// Nothing here depends on PIDs, so it works across PID namespaces (a
// container's PID 1 is not the host's PID 1) and across mount namespaces
// that share the tmpfs (the lock belongs to the inode, not the path).
// The PIDs kept in the segment are for display only.
//
// Anonymous (intra-process) rings are only mapped by this process, so
// their leases are a table in memory with the same semantics.

// leaseHold is a held lease: the byte and, for a file, the descriptor
// whose open file description holds the lock (-1 for anonymous rings).
type leaseHold struct {
	off int
	fd  int
}

// anonLeases are the leases of an anonymous ring. Safe for concurrent use.
type anonLeases struct {
	mu   sync.Mutex
	held map[int]bool
}

func (a *anonLeases) try(off int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[off] {
		return false
	}
	if a.held == nil {
		a.held = map[int]bool{}
	}
	a.held[off] = true
	return true
}

func (a *anonLeases) isHeld(off int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[off]
}

func (a *anonLeases) drop(off int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.held, off)
}

// tryLease takes the lease on byte off without blocking. ok is false if
// another endpoint (of any process) holds it. Not on a hot path.
func (r *Region) tryLease(off int) (h leaseHold, ok bool, err error) {
	if r.anon != nil {
		return leaseHold{off: off, fd: -1}, r.anon.try(off), nil
	}
	return r.file.tryLease(off)
}

// leaseHeld reports whether an endpoint holds the lease on byte off. An
// error (which should not happen on Linux ≥ 3.15) counts as held: never
// free an entry whose owner may live. One fcntl syscall for a file.
func (r *Region) leaseHeld(off int) bool {
	if r.anon != nil {
		return r.anon.isHeld(off)
	}
	held, err := ofdHeld(r.file.fd, off)
	return held || err != nil
}

// dropLease gives a lease up.
func (r *Region) dropLease(h leaseHold) {
	if r.anon != nil {
		r.anon.drop(h.off)
		return
	}
	closeLease(h)
}
