package udp

// Checksum is the CRC32C a datagram's header carries at offset 16: over
// the whole datagram with bytes 16..20 excluded. Exported for tests and
// tools that build datagrams by hand.
func Checksum(b []byte) uint32 {
	if len(b) < CommonLen {
		return 0
	}
	return checksum(b)
}
