package udp

import (
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/hilrig/hilrig/internal/safefile"
	"strings"
)

// ErrKeyMode is a domain key file that group or others may access.
var ErrKeyMode = errors.New("udp: domain key file readable beyond its owner")

// maxKeyFile bounds what LoadKeyFile reads: hex of MaxKeyLen bytes plus
// whitespace.
const maxKeyFile = 2*MaxKeyLen + 256

// LoadKeyFile reads a domain key: a regular file of mode 0600 (or
// stricter: no group or other bits) holding the key in hex (MinKeyLen..
// MaxKeyLen bytes; whitespace and line breaks ignored), e.g. made with
// `head -c 32 /dev/urandom | xxd -p -c 64 > key && chmod 600 key`.
// Errors name the file; a permissive mode is ErrKeyMode.
func LoadKeyFile(path string) (*Key, error) {
	raw, err := safefile.ReadPrivate(path, maxKeyFile, fmt.Sprintf("%d bytes (hex of %d..%d bytes)", maxKeyFile, MinKeyLen, MaxKeyLen))
	switch {
	case errors.Is(err, safefile.ErrExposed):
		return nil, fmt.Errorf("%w: %w, want 0600", ErrKeyMode, err)
	case err != nil:
		return nil, fmt.Errorf("%w: domain key file: %w", ErrConfig, err)
	}
	txt := strings.Join(strings.Fields(string(raw)), "")
	k, err := hex.DecodeString(txt)
	if err != nil {
		return nil, fmt.Errorf("%w: domain key file %s: want the key in hex: %w", ErrConfig, path, err)
	}
	key, err := NewKey(k)
	if err != nil {
		return nil, fmt.Errorf("domain key file %s: %w", path, err)
	}
	return key, nil
}

// fileKind names a non-regular file's type for errors.
