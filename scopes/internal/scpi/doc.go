// Package scpi is the instrument transport under the scope drivers: SCPI
// messages over a raw TCP socket (vendor default ports in [DefaultPort]) or
// over VXI-11 (ONC RPC with record marking, portmapper on port 111),
// IEEE 488.2 definite-length block reads driven by the length header,
// per-command timeouts bounded by ctx, and resynchronisation after any
// timeout or garbage reply.
//
// Why resynchronise: on a raw socket a reply that arrives after its query
// timed out stays in the stream and would be read as the answer to the next
// query, shifting every answer after it by one. [Conn] therefore marks
// itself out of sync on any timeout, cancellation or unparseable reply, and
// before the next command it discards what it has buffered, drains the
// socket, sends *CLS and a marker — random values written with *ESE and
// read back with *ESE? — and discards every line up to the exact marker
// values, then everything behind them. Because an instrument executes
// commands in order, any late reply precedes the marker; because the
// values are fresh, an earlier resync's marker ("1" of an *OPC?, say)
// cannot pass for this one.
package scpi

// DefaultPort returns the raw-socket SCPI port a vendor's scopes listen on
// by default: Tektronix 4000 (configurable on the instrument), Keysight and
// Siglent 5025, Rigol 5555. It returns 0 for an unknown vendor.
func DefaultPort(vendor string) int {
	switch vendor {
	case "tek", "tektronix":
		return 4000
	case "keysight", "siglent":
		return 5025
	case "rigol":
		return 5555
	}
	return 0
}
