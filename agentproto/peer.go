package agentproto

import (
	"regexp"

	"github.com/hilrig/hilrig/ros2/rostopic"
)

// Peer middlewares (issue 19): an endpoint whose Start.Middleware names a
// peer (cyclonedds, fastdds-shm, fastdds-udp, iceoryx) runs the same role
// on that middleware instead of hilrig's own, in the peer agent binary
// (hilrig-peer). A peer carries no out-of-band header, so its messages
// begin with an in-band one of PeerHeaderBytes:
//
//	[0:8)   the publisher's epoch (top 16 bits) and its sequence number
//	        (low 48 bits, first message 1), little-endian: PeerSeqWord
//	[8:16)  CLOCK_MONOTONIC ns, stamped immediately before the peer's write call
//	[16:24) the same instant on Start.Stamp's clock (cross-host latency)
//
// and the roles' own bytes (a ping's echoed sequence and stamp) follow it.
// Payload sizes are wire sizes: a 64-byte case sends 64 bytes on every
// middleware.

// MiddlewareHilrig is hilrig's own middleware, the default ("" means it).
const MiddlewareHilrig = "hilrig"

// PeerHeaderBytes is the in-band header of a peer message.
const PeerHeaderBytes = 24

// PeerSeqBits is the width of the sequence number in a peer header's first
// word; the 16 bits above it hold the publisher's epoch, so a restarted
// publisher (its sequence back at 1) is told from a late or duplicate
// message, as hilrig's own header tells them by its epoch field.
const PeerSeqBits = 48

// PeerSeqWord packs a publisher epoch and a sequence number (< 2^48) into a
// peer header's first word.
func PeerSeqWord(epoch uint16, seq uint64) uint64 {
	return uint64(epoch)<<PeerSeqBits | seq&(1<<PeerSeqBits-1)
}

// SplitPeerSeqWord is PeerSeqWord's inverse.
func SplitPeerSeqWord(w uint64) (epoch uint16, seq uint64) {
	return uint16(w >> PeerSeqBits), w & (1<<PeerSeqBits - 1)
}

var (
	middlewareRE = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	peerAddrRE   = regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,3}){3}$`)
)

// IsPeer reports whether name selects a peer middleware (not hilrig).
func IsPeer(name string) bool { return name != "" && name != MiddlewareHilrig }

// validatePeer checks the peer part of a start request: the name's form
// (whether the agent has it is the agent's answer) and payloads large
// enough for the in-band header.
func (s *Start) validatePeer() error {
	if !IsPeer(s.Middleware) {
		if s.ROS2 != nil {
			// A ROS 2 message on hilrig's own bus (what `hilrig bridge`
			// forwards): the same payload and stamp rules as on a peer.
			return s.validateROS2(invalidFor(s.Endpoint))
		}
		if s.ColdPeer {
			return invalidFor(s.Endpoint)("start.cold_peer: only a peer middleware opens participants (middleware %q)", s.Middleware)
		}
		return nil
	}
	bad := invalidFor(s.Endpoint)
	if n := s.PeerNet; n != nil {
		for _, a := range append([]string{n.Address}, n.Peers...) {
			if a != "" && !peerAddrRE.MatchString(a) {
				return bad("start.peer_net: address %q: want an IPv4 address", a)
			}
		}
	}
	if !middlewareRE.MatchString(s.Middleware) {
		return bad("start.middleware %q: want 1..32 of [a-z0-9-]", s.Middleware)
	}
	if s.Send == SendLoan {
		return bad("start.send loan: only hilrig's middleware loans (middleware %s)", s.Middleware)
	}
	if s.ROS2 != nil {
		return s.validateROS2(bad)
	}
	need := PeerHeaderBytes
	if roundTripRole(s.Role) {
		need += PingHeaderBytes
	}
	if s.Contract.MaxPayload < need {
		return bad("start.contract.max_payload %d: middleware %s needs at least %d bytes (%d-byte in-band header)", s.Contract.MaxPayload, s.Middleware, need, PeerHeaderBytes)
	}
	if (s.Role == Publisher || s.Role == Pinger) && s.Payload < need {
		return bad("start.payload %d: middleware %s needs at least %d bytes (%d-byte in-band header)", s.Payload, s.Middleware, need, PeerHeaderBytes)
	}
	return nil
}

// PeerNet is where a peer middleware's participant may talk: the local
// address it binds (its only interface) and the addresses it discovers
// by unicast. Empty: loopback only (127.0.0.1). The rig sets it from a
// link's addresses for a UDP flow between boards (a namespace veth);
// multicast stays off either way.
type PeerNet struct {
	Address string   `json:"address,omitempty"`
	Peers   []string `json:"peers,omitempty"`
	// SharedMemoryOnly: the endpoints share /dev/shm but no network
	// (boards in different namespaces on one host); a peer that can
	// discover over shared memory (Fast DDS's SHM transport) does so.
	SharedMemoryOnly bool `json:"shared_memory_only,omitempty"`
}

// Key identifies the participant a PeerNet needs ("" for loopback).
func (n *PeerNet) Key() string {
	switch {
	case n == nil:
		return ""
	case n.SharedMemoryOnly:
		return "shm"
	}
	return n.Address
}

// A ROS 2 topic (Start.ROS2, issue 33): a DDS peer endpoint that speaks
// ROS 2's conventions instead of carrying raw bytes — or, on hilrig's own
// middleware, a hilrig topic whose payloads are such messages (the bus
// side of `hilrig bridge`; hilrig's own frame then carries the sequence). Its messages are the
// type's XCDR1 encoding (rostopic.Template, built once by the publisher
// at Payload bytes), so no in-band header of PeerHeaderBytes fits in
// them. What rides instead:
//
//   - the send time, in the message's std_msgs/Header stamp
//     (rostopic.StampOffset), on Start.Stamp's clock, stamped by the
//     peer's C code immediately before its write call — as a ROS 2 node
//     stamps header.stamp with now() before publish;
//   - no sequence number: the reader numbers messages in arrival order,
//     so loss shows only as fewer messages than Count (the final counts
//     it), never as a gap, and a ROS 2 endpoint runs only the one-way
//     roles (publisher, subscriber).
//
// The reader takes its receive stamp on CLOCK_MONOTONIC as for every
// peer and converts the header stamp into CLOCK_MONOTONIC with the
// clocks' offset read at receipt (one kernel: latency mono); across
// kernels the controller measures on the stamp clock (LatencyStamp).

// validateROS2 checks a ROS 2 endpoint: the topic's form, a one-way role,
// a payload that holds at least the header stamp.
func (s *Start) validateROS2(bad func(string, ...any) error) error {
	if err := s.ROS2.Validate(); err != nil {
		return bad("start.ros2: %v", err)
	}
	if s.Role != Publisher && s.Role != Subscriber {
		return bad("start.ros2: role %s: a ROS 2 topic carries no sequence number or ping header, so only publisher and subscriber run on one", s.Role)
	}
	need := rostopic.StampOffset + rostopic.StampBytes
	if s.Contract.MaxPayload < need {
		return bad("start.contract.max_payload %d: a ROS 2 message with a header needs at least %d bytes", s.Contract.MaxPayload, need)
	}
	if s.Role == Publisher && (s.Payload < need || s.Payload > s.Contract.MaxPayload) {
		return bad("start.payload %d: a ROS 2 message with a header is %d..%d bytes here", s.Payload, need, s.Contract.MaxPayload)
	}
	return nil
}
