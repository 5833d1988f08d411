package middleware

import "errors"

// Sentinel errors; compare with errors.Is. Returned errors wrap them with
// context (topic, segment file, peer).
var (
	// ErrClosed is returned by calls on a closed node, publisher or subscriber.
	ErrClosed = errors.New("middleware: closed")
	// ErrTimeout is returned when a Reliable send waited SendTimeout for a
	// slow subscriber.
	ErrTimeout = errors.New("middleware: timeout")
	// ErrTooLarge is returned when a payload exceeds the contract's MaxPayload.
	ErrTooLarge = errors.New("middleware: payload larger than contract MaxPayload")
	// ErrContract is returned when a contract is invalid or does not match the
	// one an existing segment or peer was created with.
	ErrContract = errors.New("middleware: contract mismatch")
	// ErrBadSegment is returned for a segment file that is truncated, corrupt
	// or of another layout version.
	ErrBadSegment = errors.New("middleware: bad shared-memory segment")
	// ErrPermission is returned for a segment owned by another uid, or an
	// RT option the process lacks the capability for.
	ErrPermission = errors.New("middleware: permission denied")
	// ErrLoanOutstanding is returned by Loan while a previous loan of the
	// same publisher is neither published nor discarded.
	ErrLoanOutstanding = errors.New("middleware: loan outstanding")
	// ErrNoSpace is returned when the filesystem of a shared-memory
	// segment (tmpfs, e.g. Docker's 64 MB /dev/shm) cannot hold the pages
	// the segment needs: by NewPublisher/NewSubscriber for the segment's
	// working set, by Send/Loan for a pool slot first used while
	// subscribers hold several messages. The error names the file, the
	// bytes needed and the filesystem's free space. Nothing is written
	// when it is returned (the alternative is SIGBUS on the first store).
	ErrNoSpace = errors.New("middleware: no space for shared-memory segment")
)

// ErrCorrupt is returned by Send, Loan, Publish, Receive and Next when a
// shared-memory segment in use was overwritten with values no publisher or
// subscriber writes (a head word, ring entry, slot header or subscriber
// table entry out of range or inconsistent), or was truncated under the
// mapping (the access that would have raised SIGBUS). The error names the
// segment file and what was wrong. The publisher or subscriber stays failed:
// every later call returns the same error; close it and remove the segment
// (`hilrig shm clean` once nobody uses it). When Receive/Next return it
// right after the callback ran, the message that callback saw may have been
// torn. NewPublisher returns it for a ring left in a state no publisher
// leaves.
var ErrCorrupt = errors.New("middleware: shared-memory segment corrupt")

// ErrBusy is returned when a topic already has a live publisher (the
// shared-memory ring has exactly one writer) or its subscriber table is
// full of live subscribers.
var ErrBusy = errors.New("middleware: busy")

// mappedErr carries an internal error under the exported sentinel, with
// the internal sentinel's text replaced by the exported one's.
type mappedErr struct {
	msg          string
	outer, inner error
}

func (e *mappedErr) Error() string   { return e.msg }
func (e *mappedErr) Unwrap() []error { return []error{e.outer, e.inner} }
