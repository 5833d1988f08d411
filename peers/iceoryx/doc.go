// Package iceoryx is hilrig's peer adapter for Eclipse iceoryx 2.0 (Debian
// iceoryx, libiceoryx-binding-c-dev, C binding): zero-copy shared-memory
// publish/subscribe through the RouDi daemon, which this package starts
// (a configuration sized for the payloads), stops by PID and cleans up
// after. It is cgo and built only with the build tag iceoryx, into the
// peer agent binary (cmd/hilrig-peer); the hilrig binary never links it.
package iceoryx
