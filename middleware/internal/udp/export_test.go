package udp

import "net/netip"

// ExportWriteRaw sends b unchanged from s's socket (tests: a replay from
// the real publisher's address).
func ExportWriteRaw(s *Sender, b []byte, to netip.AddrPort) error { return s.conn.WriteTo(b, to) }
