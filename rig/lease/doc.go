// Package lease keeps two controllers from driving one rack: a rack lease
// is a file on the controller host (holder, host, pid, process start time,
// since) written under a short flock(2) critical section, so acquiring is
// atomic between processes. A lease whose holder process is gone (a killed
// controller, or a `hilrig rack lease` whose shell exited) is stale and is
// taken over by the next Acquire, which reports whom it replaced.
//
// The host lock holds for controllers on one host. Lab-wide exclusion is
// the results store's job (a PostgreSQL advisory lock keyed by the rack):
// consumers depend on the Locker interface they declare (rig.Options.Lease)
// so that store can replace [Dir] without touching them.
//
// Linux and other Unix systems; elsewhere every call returns an error
// matching errors.ErrUnsupported.
package lease
