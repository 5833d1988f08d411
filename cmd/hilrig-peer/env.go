//go:build cyclonedds || fastdds || iceoryx

package main

import (
	"fmt"
	"os"
	"strconv"
)

// envUint reads a peer setting from the environment (def when unset).
func envUint(name string, def uint64) (uint64, error) {
	s := os.Getenv(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, s, err)
	}
	return n, nil
}
