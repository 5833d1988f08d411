package udp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding"
	"fmt"
	"hash"
)

// Authenticated datagrams (docs/udp.md, "Authentication"; docs/security.md).
// A datagram sent under a domain key has bit 7 of the kind byte set and
// carries a 24-byte trailer: a counter u64 (strictly increasing per
// sending endpoint, for replay detection) and a 128-bit tag, the first 16
// bytes of HMAC-SHA-256(key, bytes [0,16) ++ [20, length−16)), i.e. every
// byte except the CRC field and the tag itself, the counter included. The
// CRC32C is computed last and covers the tag too, so a corrupted datagram
// is still Malformed, not Unauthenticated.
const (
	// KindAuth marks an authenticated datagram in the kind byte.
	KindAuth = 0x80
	// TagLen is the truncated HMAC-SHA-256 tag.
	TagLen = 16
	// CounterLen is the replay counter before the tag.
	CounterLen = 8
	// AuthLen is the trailer an authenticated datagram carries.
	AuthLen = CounterLen + TagLen
	// MinKeyLen is the shortest domain key accepted (bytes).
	MinKeyLen = 16
	// MaxKeyLen is the longest domain key accepted (bytes).
	MaxKeyLen = 1024
)

// Key is a domain key: every datagram of a keyed endpoint is
// authenticated with it, and datagrams without a valid tag are dropped.
// Immutable; safe for concurrent use (each endpoint derives its own MAC
// state with newMAC).
type Key struct{ b []byte }

// NewKey copies k (MinKeyLen..MaxKeyLen bytes) into a Key.
func NewKey(k []byte) (*Key, error) {
	if len(k) < MinKeyLen || len(k) > MaxKeyLen {
		return nil, fmt.Errorf("%w: domain key of %d bytes, want %d..%d", ErrConfig, len(k), MinKeyLen, MaxKeyLen)
	}
	return &Key{b: append([]byte(nil), k...)}, nil
}

// Overhead is the bytes a datagram grows by under k (0 for a nil key).
func (k *Key) Overhead() int {
	if k == nil {
		return 0
	}
	return AuthLen
}

// mac seals and verifies datagrams with HMAC-SHA-256 (RFC 2104). Not safe
// for concurrent use: every goroutine that seals or verifies holds its own
// (or a lock).
//
// It keeps the SHA-256 states after the ipad and opad blocks and restores
// them per datagram (what crypto/hmac does too, minus its per-call
// bookkeeping: about a fifth of the cost of a small datagram here);
// TestMACMatchesCryptoHMAC checks the tags against crypto/hmac.
type mac struct {
	in, out  hash.Hash
	inU      encoding.BinaryUnmarshaler
	outU     encoding.BinaryUnmarshaler
	ist, ost []byte // marshalled states after the ipad / opad block
	sum      [sha256.Size]byte
	ctr      uint64 // last counter sealed
}

// newMAC returns the MAC state of one sending/receiving context; nil for
// a nil key (unauthenticated domain). ctr0 is the first counter minus one:
// endpoints start at their creation time in ns (CLOCK_REALTIME), so a
// restarted endpoint's counters are above its predecessor's.
func (k *Key) newMAC(ctr0 uint64) *mac {
	if k == nil {
		return nil
	}
	key := k.b
	if len(key) > sha256.BlockSize {
		s := sha256.Sum256(key)
		key = s[:]
	}
	var ipad, opad [sha256.BlockSize]byte
	copy(ipad[:], key)
	copy(opad[:], key)
	for i := range ipad {
		ipad[i] ^= 0x36
		opad[i] ^= 0x5c
	}
	m := &mac{in: sha256.New(), out: sha256.New(), ctr: ctr0}
	m.in.Write(ipad[:])
	m.out.Write(opad[:])
	// sha256's digest implements both (it is how crypto/hmac restores it).
	m.ist, _ = m.in.(encoding.BinaryMarshaler).MarshalBinary()
	m.ost, _ = m.out.(encoding.BinaryMarshaler).MarshalBinary()
	m.inU, m.outU = m.in.(encoding.BinaryUnmarshaler), m.out.(encoding.BinaryUnmarshaler)
	return m
}

// hmacOf is HMAC-SHA-256(key, a ++ b) into m.sum. 0 allocs.
func (m *mac) hmacOf(a, b []byte) []byte {
	_ = m.inU.UnmarshalBinary(m.ist)
	m.in.Write(a)
	m.in.Write(b)
	inner := m.in.Sum(m.sum[:0])
	_ = m.outU.UnmarshalBinary(m.ost)
	m.out.Write(inner)
	return m.out.Sum(m.sum[:0])
}

func (m *mac) compute(b []byte, n int) []byte {
	return m.hmacOf(b[:16], b[CommonLen:n-TagLen])[:TagLen]
}

// seal turns the plain datagram b[:n] (already framed by putCommon) into an
// authenticated one of n+AuthLen bytes, in place; b needs the room. 0
// allocs.
func (m *mac) seal(b []byte, n int) (int, error) {
	t := n + AuthLen
	if t > len(b) {
		return 0, ErrBuffer
	}
	if t > MaxDatagram {
		return 0, ErrField
	}
	m.ctr++
	b[5] |= KindAuth
	be.PutUint16(b[6:], uint16(t))
	be.PutUint64(b[n:], m.ctr)
	copy(b[t-TagLen:t], m.compute(b, t))
	be.PutUint32(b[16:], checksum(b[:t]))
	return t, nil
}

// verify checks an authenticated datagram's tag (Parse already checked
// its length and CRC) in constant time and returns its counter.
func (m *mac) verify(b []byte) (uint64, bool) {
	n := len(b)
	if n < CommonLen+AuthLen {
		return 0, false
	}
	ok := subtle.ConstantTimeCompare(m.compute(b, n), b[n-TagLen:]) == 1
	return be.Uint64(b[n-AuthLen:]), ok
}

// replayWindow accepts each counter once: counters above the highest seen
// move the window, counters within replayBits below it are checked
// against a bitmap (as IPsec's anti-replay window, RFC 4303 §3.4.3),
// older ones are refused.
type replayWindow struct {
	top  uint64
	bits [replayWords]uint64
}

const (
	replayWords = 16
	replayBits  = replayWords * 64
)

// accept reports whether ctr is new and records it.
func (w *replayWindow) accept(ctr uint64) bool {
	switch {
	case ctr == 0:
		return false
	case ctr > w.top:
		d := ctr - w.top
		if d >= replayBits {
			w.bits = [replayWords]uint64{}
		} else {
			for i := uint64(0); i < d; i++ { // clear the bits that scroll in
				p := (w.top + 1 + i) % replayBits
				w.bits[p/64] &^= 1 << (p % 64)
			}
		}
		w.top = ctr
	case w.top-ctr >= replayBits:
		return false
	}
	p := ctr % replayBits
	if w.bits[p/64]&(1<<(p%64)) != 0 {
		return false
	}
	w.bits[p/64] |= 1 << (p % 64)
	return true
}
