// Package udptest is the test kit of the UDP transport's tests, those of
// middleware/internal/udp and of the middleware's UDP API alike: the
// numbered payload pattern they send and check.
package udptest

import (
	"encoding/binary"
	"fmt"
)

// Fill writes a payload that encodes its sequence number (big-endian, in
// the first 8 bytes when there is room) and, in every byte, its length.
func Fill(p []byte, seq uint64) {
	for i := range p {
		p[i] = byte(seq*7 + uint64(i)*13)
	}
	if len(p) >= 8 {
		binary.BigEndian.PutUint64(p, seq)
	}
}

// Check reports whether p is the payload Fill wrote for seq, naming the
// first difference.
func Check(p []byte, seq uint64) error {
	if len(p) >= 8 && binary.BigEndian.Uint64(p) != seq {
		return fmt.Errorf("payload carries seq %d, header %d", binary.BigEndian.Uint64(p), seq)
	}
	for i := 8; i < len(p); i++ {
		if p[i] != byte(seq*7+uint64(i)*13) {
			return fmt.Errorf("seq %d: byte %d corrupt", seq, i)
		}
	}
	return nil
}
