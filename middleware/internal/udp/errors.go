package udp

import "errors"

// Decode errors. They are returned unwrapped on the hot path (no
// allocation); callers that log them add the peer address themselves.
var (
	// ErrShort is a datagram shorter than its fixed header.
	ErrShort = errors.New("udp: datagram too short")
	// ErrMagic is a datagram that does not start with the hilrig magic.
	ErrMagic = errors.New("udp: bad magic")
	// ErrVersion is a datagram of another wire version.
	ErrVersion = errors.New("udp: unsupported wire version")
	// ErrLength is a datagram whose length field disagrees with its size.
	ErrLength = errors.New("udp: length field does not match datagram size")
	// ErrCRC is a datagram whose CRC32C does not match.
	ErrCRC = errors.New("udp: CRC32C mismatch")
	// ErrKind is a datagram of an unknown or unexpected kind.
	ErrKind = errors.New("udp: unknown datagram kind")
	// ErrField is a datagram with an out-of-range field (fragment index,
	// lengths, record count).
	ErrField = errors.New("udp: field out of range")
	// ErrAuth is an authenticated datagram given to a decoder without the
	// domain key, or one whose tag does not verify.
	ErrAuth = errors.New("udp: datagram authentication failed")
	// ErrBuffer is returned by MarshalBinaryTo when the destination is too
	// small.
	ErrBuffer = errors.New("udp: buffer too small")
)

// Endpoint errors.
var (
	// ErrClosed is returned by calls on a closed Sender or Receiver.
	ErrClosed = errors.New("udp: closed")
	// ErrTimeout is returned when a reliable send waited SendTimeout for the
	// send window to open.
	ErrTimeout = errors.New("udp: send window timeout")
	// ErrTooLarge is a payload larger than the configured MaxPayload.
	ErrTooLarge = errors.New("udp: payload larger than MaxPayload")
	// ErrConfig is an invalid configuration; the wrapping error names the field.
	ErrConfig = errors.New("udp: invalid configuration")
	// ErrLoanOutstanding is returned by Loan while a previous loan is open.
	ErrLoanOutstanding = errors.New("udp: loan outstanding")
)
