package udp

import "math/rand/v2"

// randEpoch returns a random epoch: restarts within one clock tick still
// get distinct epochs, unlike a time-derived one.
func randEpoch() uint32 { return rand.Uint32() }
