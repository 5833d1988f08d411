package sys

import "errors"

// ErrTimeout is returned by Futex.Wait when its timeout elapsed and by Read
// when SO_RCVTIMEO elapsed. Returned unwrapped (hot path): compare with ==
// or errors.Is.
var ErrTimeout = errors.New("sys: timeout")
