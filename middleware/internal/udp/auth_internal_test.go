package udp

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
)

// TestMACMatchesCryptoHMAC: the restored-state HMAC is HMAC-SHA-256, for
// short keys, a block-long one and ones longer than a block (hashed
// first), over empty and multi-block inputs.
func TestMACMatchesCryptoHMAC(t *testing.T) {
	for _, kl := range []int{MinKeyLen, 32, 64, 65, 200, MaxKeyLen} {
		key := make([]byte, kl)
		for i := range key {
			key[i] = byte(i*7 + kl)
		}
		k, err := NewKey(key)
		if err != nil {
			t.Fatal(err)
		}
		m := k.newMAC(0)
		for _, n := range []int{0, 1, 55, 64, 200, 65000} {
			a, b := []byte("0123456789abcdef"), bytes.Repeat([]byte{byte(n)}, n)
			h := hmac.New(sha256.New, key)
			h.Write(a)
			h.Write(b)
			want := h.Sum(nil)
			for range 2 { // twice: the state is restored, not accumulated
				if got := m.hmacOf(a, b); !bytes.Equal(got, want) {
					t.Fatalf("key %d B, data %d B: %x, want %x", kl, n, got, want)
				}
			}
		}
	}
}
