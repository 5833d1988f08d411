// Package cyclonedds is hilrig's peer adapter for Eclipse Cyclone DDS 0.10
// (Debian cyclonedds-dev, C API): a raw-bytes topic type (raw.idl, idlc
// output committed), writers and readers with hilrig's QoS mapping
// (docs/peers.md), confined to the loopback interface with unicast
// discovery. It is cgo and built only with the build tag cyclonedds, into
// the peer agent binary (cmd/hilrig-peer); the hilrig binary never links it.
package cyclonedds
