package middleware

import "errors"

// errNotImplemented is returned by transports that have not landed yet
// (the UDP placeholder in udp.go refers to it).
var errNotImplemented = errors.New("middleware: not implemented yet")
