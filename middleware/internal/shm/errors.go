package shm

import "errors"

// Sentinels; the middleware maps them onto its own exported ones.
var (
	// ErrBadSegment: truncated, corrupt, or another layout version.
	ErrBadSegment = errors.New("bad segment")
	// ErrContract: a valid segment whose static parameters differ from ours.
	ErrContract = errors.New("contract mismatch")
	// ErrPermission: segment owned by another uid.
	ErrPermission = errors.New("permission denied")
	// ErrBusy: the ring already has a live publisher, or the subscriber
	// table is full of live subscribers.
	ErrBusy = errors.New("busy")
	// ErrTimeout: a Reliable publisher waited past its deadline.
	ErrTimeout = errors.New("timeout")
	// ErrLoanOutstanding: Acquire while a slot is already acquired.
	ErrLoanOutstanding = errors.New("loan outstanding")
	// ErrCorrupt: a segment in use was overwritten with values the
	// protocol never writes, or shortened under its mapping. The reader or
	// writer that saw it stays failed (every later call returns the same
	// error); close it and remove the segment.
	ErrCorrupt = errors.New("segment corrupt")
	// ErrNoSpace: the filesystem holding the segment (tmpfs) cannot
	// commit the pages the segment needs.
	ErrNoSpace = errors.New("no space for segment")
)
