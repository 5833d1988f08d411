package shm

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Memory faults.
//
// Another process can truncate a segment file under our mapping; the next
// access past the new end raises SIGBUS, which kills a Go program
// ("unexpected fault address") unless the goroutine runs with
// runtime/debug.SetPanicOnFault(true): then the fault is a panic whose
// value is a runtime.Error with an Addr method. Callers that touch the
// mapping (the middleware's send and receive paths, Inspect, Open) enable
// it, recover, and hand the value to Fault, which turns a fault inside
// the mapping into ErrCorrupt naming the file and re-panics anything else
// (a bug, or a fault of the caller's own code elsewhere). Enabling it costs
// two runtime calls and a defer per operation, no allocation.

// faultAddr returns the faulting address if v is a memory-fault panic.
func faultAddr(v any) (uintptr, bool) {
	e, ok := v.(interface {
		runtime.Error
		Addr() uintptr
	})
	if !ok {
		return 0, false
	}
	return e.Addr(), true
}

// Fault converts v, a value recovered from a panic while accessing r, to
// an error wrapping ErrCorrupt that names the segment file, if v is a
// memory fault inside r's mapping; any other value is re-panicked. Not on
// the hot path (only after a panic).
func (r *Region) Fault(v any) error {
	a, ok := faultAddr(v)
	base := uintptr(r.base)
	if !ok || a < base || a >= base+uintptr(len(r.mem)) {
		panic(v)
	}
	return r.faultErr(a - base)
}

func (r *Region) faultErr(off uintptr) error {
	return fmt.Errorf("%s: %w: memory fault at offset %d of the %d-byte mapping (the file was truncated while in use%s)",
		r.name, ErrCorrupt, off, len(r.mem), r.sizeNow())
}

// corrupt builds the error for a protocol violation seen in r.
func (r *Region) corrupt(format string, a ...any) error {
	return fmt.Errorf("%s: %w: %s; close every user of it and remove it (`hilrig shm clean`)", r.name, ErrCorrupt, fmt.Sprintf(format, a...))
}

// guard runs f, a cold path that reads a mapping of the file at path,
// with faults turned into an error wrapping ErrCorrupt naming the file.
// Any memory fault counts (f touches no other memory that can fault); other
// panics are re-panicked.
func guard(path string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := faultAddr(v); !ok {
				panic(v)
			}
			err = fmt.Errorf("%s: %w: memory fault while reading it (the file was truncated while in use)", path, ErrCorrupt)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return f()
}

// Guard runs f, which accesses r's mapping on a cold path (opening an
// endpoint, stats, close), with a memory fault inside the mapping turned
// into ErrCorrupt naming the file (see Fault).
func (r *Region) Guard(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = r.Fault(v)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return f()
}
