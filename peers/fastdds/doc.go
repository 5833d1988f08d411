// Package fastdds is hilrig's peer adapter for eProsima Fast DDS 2.9
// (Debian libfastrtps-dev, C++ API, through a small C shim compiled by
// cgo): a hand-written raw-bytes TopicDataType (no fastddsgen), and two
// cases, each with exactly one transport — shared memory (fastdds-shm) or
// UDPv4 on loopback (fastdds-udp) — with data sharing off, confined to
// loopback with unicast-only discovery. It is cgo and built only with the
// build tag fastdds, into the peer agent binary (cmd/hilrig-peer); the
// hilrig binary never links it.
package fastdds
