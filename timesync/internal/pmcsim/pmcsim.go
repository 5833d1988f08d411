// Package pmcsim is a fake ptp4l management socket: a Unix datagram
// socket bound at a path that answers the GETs hilrig's reader sends
// (PORT_PROPERTIES_NP, CURRENT_DATA_SET, PARENT_DATA_SET, TIME_STATUS_NP),
// SET SYNCHRONIZATION_UNCERTAIN_NP and SET SUBSCRIBE_EVENTS_NP, and
// pushes PORT_DATA_SET notifications to subscribers at every port state
// change, as linuxptp's ptp4l does (clock.c, port.c). Its state is
// scripted, so tests can play the faults a real rack shows rarely: the
// local clock identity changing, a second instance binding the same
// path, the port flapping, the grandmaster's clockClass cycling, a
// negative mean path delay.
//
// Every poll (a GET PORT_PROPERTIES_NP, the first request of a reading)
// is a new Sync and a new measurement: the ingress time is the system
// clock and the offset alternates between State.Offset and its 1 ns
// neighbour, so a lock tracker sees fresh offsets, as timesyncsim does.
//
// It lives under timesync/internal because only there may facebook/time
// be imported. Safe for concurrent use.
package pmcsim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/facebook/time/ptp/protocol"
	"github.com/hilrig/hilrig/timesync/internal/pmc"
	"github.com/hilrig/hilrig/timesync/timesyncsim"
)

// State is what the fake ptp4l reports. Port states and clock classes are
// numbered as on the wire.
type State struct {
	ClockIdentity uint64
	PortState     uint8
	Interface     string
	GMIdentity    uint64
	GMPresent     bool
	// GMClockClass, GMClockAccuracy and GMVariance are the grandmaster's
	// clockQuality (PARENT_DATA_SET).
	GMClockClass    uint8
	GMClockAccuracy uint8
	GMVariance      uint16
	Offset          time.Duration
	MeanPathDelay   time.Duration
	StepsRemoved    uint16
	// NoSubscribe answers SUBSCRIBE_EVENTS_NP with NOT_SUPPORTED (an old
	// ptp4l).
	NoSubscribe bool
}

// Port states used by tests (IEEE 1588-2019 Table 20).
const (
	Listening    uint8 = 4
	Master       uint8 = 6
	Uncalibrated uint8 = 8
	Slave        uint8 = 9
)

// Locked is a healthy slave of a free-running ptp4l grandmaster
// (clockClass 248), as on the sim rack.
func Locked() State {
	return State{ClockIdentity: 0x02000afffee90002, PortState: Slave, Interface: "sim0",
		GMIdentity: 0x02000afffee90001, GMPresent: true, GMClockClass: 248, GMClockAccuracy: 0xfe, GMVariance: 0xffff,
		Offset: 150, MeanPathDelay: 2 * time.Microsecond, StepsRemoved: 1}
}

type subscriber struct {
	addr *net.UnixAddr
	seq  uint16
}

// Server is one fake ptp4l bound at a path.
type Server struct {
	path string
	conn *net.UnixConn
	done chan struct{}

	mu      sync.Mutex
	st      State
	ingress int64
	dither  bool
	off     time.Duration
	subs    map[protocol.PortIdentity]*subscriber
	notes   uint64
}

// Start binds a fake ptp4l at path (removing what is there first, as
// ptp4l does: a second Start on the same path is a second ptp4l taking
// it over while the first keeps running) and serves until Close.
func Start(path string, st State) (*Server, error) {
	_ = os.Remove(path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("pmcsim: bind %s: %w", path, err)
	}
	s := &Server{path: path, conn: conn, done: make(chan struct{}), st: st, subs: map[protocol.PortIdentity]*subscriber{}}
	go s.serve()
	return s, nil
}

// Path returns the socket path.
func (s *Server) Path() string { return s.path }

// Close stops serving and waits for the server goroutine. It leaves the
// socket file, as a killed ptp4l does. Idempotent.
func (s *Server) Close() error {
	_ = s.conn.Close()
	<-s.done
	return nil
}

// Update changes the state under the lock. A port state change is
// notified to every subscriber before Update returns.
func (s *Server) Update(f func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.st.PortState
	f(&s.st)
	if s.st.PortState != old {
		s.notifyLocked()
	}
}

// DropSubscribers forgets every subscription, as a restarted ptp4l has
// none (without a restart: the socket stays the same).
func (s *Server) DropSubscribers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.subs)
}

// Subscribers returns how many subscriptions are registered.
func (s *Server) Subscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// Notifications counts the PORT_DATA_SET notifications sent.
func (s *Server) Notifications() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notes
}

func (s *Server) serve() {
	defer close(s.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFromUnix(buf)
		if err != nil {
			return
		}
		if from == nil {
			continue
		}
		if reply := s.answer(buf[:n], from); reply != nil {
			_, _ = s.conn.WriteToUnix(reply, from)
		}
	}
}

func (s *Server) answer(b []byte, from *net.UnixAddr) []byte {
	// Only the head is decoded: a GET's zeroed TLV does not decode
	// (PORT_PROPERTIES_NP's interface text is empty).
	if len(b) < 54 || b[0]&0x0f != uint8(protocol.MessageManagement) {
		return nil
	}
	id := protocol.ManagementID(binary.BigEndian.Uint16(b[52:54]))
	if id == pmc.IDSubscribeEventsNP {
		return s.subscribe(b, from)
	}
	req := &protocol.Management{}
	if err := binary.Read(bytes.NewReader(b), binary.BigEndian, &req.ManagementMsgHead); err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var tlv protocol.ManagementTLV
	head := func(id protocol.ManagementID) protocol.ManagementTLVHead {
		return protocol.ManagementTLVHead{TLVHead: protocol.TLVHead{TLVType: protocol.TLVManagement}, ManagementID: id}
	}
	switch id {
	case protocol.IDPortPropertiesNP:
		// A new reading: a Sync arrived and the offset was measured anew.
		if n := time.Now().UnixNano(); n > s.ingress {
			s.ingress = n
		} else {
			s.ingress++
		}
		s.off = s.st.Offset
		if s.dither {
			s.off = timesyncsim.Neighbour(s.off)
		}
		s.dither = !s.dither
		tlv = &protocol.PortPropertiesNPTLV{ManagementTLVHead: head(protocol.IDPortPropertiesNP),
			PortIdentity: protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(s.st.ClockIdentity), PortNumber: 1},
			PortState:    protocol.PortState(s.st.PortState), Interface: protocol.PTPText(s.st.Interface)}
	case protocol.IDCurrentDataSet:
		tlv = &protocol.CurrentDataSetTLV{ManagementTLVHead: head(protocol.IDCurrentDataSet), StepsRemoved: s.st.StepsRemoved,
			OffsetFromMaster: protocol.NewTimeInterval(float64(s.off)), MeanPathDelay: protocol.NewTimeInterval(float64(s.st.MeanPathDelay))}
	case protocol.IDParentDataSet:
		tlv = &protocol.ParentDataSetTLV{ManagementTLVHead: head(protocol.IDParentDataSet),
			ParentPortIdentity:   protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(s.st.GMIdentity), PortNumber: 1},
			GrandmasterPriority1: 128, GrandmasterPriority2: 128, GrandmasterIdentity: protocol.ClockIdentity(s.st.GMIdentity),
			GrandmasterClockQuality: protocol.ClockQuality{ClockClass: protocol.ClockClass(s.st.GMClockClass),
				ClockAccuracy: protocol.ClockAccuracy(s.st.GMClockAccuracy), OffsetScaledLogVariance: s.st.GMVariance}}
	case protocol.IDTimeStatusNP:
		var present int32
		if s.st.GMPresent {
			present = 1
		}
		tlv = &protocol.TimeStatusNPTLV{ManagementTLVHead: head(protocol.IDTimeStatusNP), MasterOffsetNS: int64(s.off),
			IngressTimeNS: s.ingress, GMPresent: present, GMIdentity: protocol.ClockIdentity(s.st.GMIdentity)}
	case pmc.IDSynchronizationUncertainNP:
		out := append([]byte(nil), b...)
		out[46] = uint8(protocol.RESPONSE)
		return out
	default:
		return nil
	}
	return s.reply(req, tlv)
}

// reply encodes tlv as the RESPONSE to req.
func (s *Server) reply(req *protocol.Management, tlv protocol.ManagementTLV) []byte {
	m := &protocol.Management{ManagementMsgHead: req.ManagementMsgHead, TLV: tlv}
	m.ActionField = protocol.RESPONSE
	m.SourcePortIdentity = protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(s.st.ClockIdentity)}
	b, err := m.MarshalBinary()
	if err != nil || len(b) < 52 {
		return nil
	}
	// Fix the lengths from what was encoded.
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	binary.BigEndian.PutUint16(b[50:52], uint16(len(b)-52))
	return b
}

// subscribe registers (or, with an empty bitmask, removes) the sender of
// a SET SUBSCRIBE_EVENTS_NP, keyed by its sourcePortIdentity as ptp4l
// does, and echoes the request as the RESPONSE.
func (s *Server) subscribe(b []byte, from *net.UnixAddr) []byte {
	if len(b) < 54+2+8 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]byte(nil), b...)
	if s.st.NoSubscribe {
		// MANAGEMENT_ERROR_STATUS NOT_SUPPORTED (0x0006), then the id.
		out = append(out[:48:48], 0, 2, 0, 8, 0, 6, b[52], b[53], 0, 0, 0, 0)
		binary.BigEndian.PutUint16(out[2:4], uint16(len(out)))
		out[46] = uint8(protocol.RESPONSE)
		return out
	}
	var pid protocol.PortIdentity
	pid.ClockIdentity = protocol.ClockIdentity(binary.BigEndian.Uint64(b[20:28]))
	pid.PortNumber = binary.BigEndian.Uint16(b[28:30])
	out[46] = uint8(protocol.RESPONSE)
	if protocol.Action(b[46]&0x0f) == protocol.GET {
		// What this subscriber holds: duration left and the bitmask.
		clear(out[54:])
		if sub := s.subs[pid]; sub != nil {
			binary.BigEndian.PutUint16(out[54:56], 30)
			out[56] = 1
		}
		return out
	}
	empty := true
	for _, x := range b[56:] {
		if x != 0 {
			empty = false
		}
	}
	if empty {
		delete(s.subs, pid)
	} else if sub := s.subs[pid]; sub != nil {
		sub.addr = from // a renewal updates the address, as ptp4l does
	} else {
		s.subs[pid] = &subscriber{addr: from}
	}
	return out
}

// notifyLocked sends a PORT_DATA_SET with the current port state to every
// subscriber, each with its own sequence id (clock_send_notification).
func (s *Server) notifyLocked() {
	for pid, sub := range s.subs {
		m := &protocol.Management{ManagementMsgHead: protocol.ManagementMsgHead{
			Header: protocol.Header{SdoIDAndMsgType: protocol.NewSdoIDAndMsgType(protocol.MessageManagement, 0),
				Version: protocol.Version, SequenceID: sub.seq, LogMessageInterval: protocol.MgmtLogMessageInterval,
				SourcePortIdentity: protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(s.st.ClockIdentity), PortNumber: 1}},
			TargetPortIdentity: pid, ActionField: protocol.RESPONSE}, TLV: &portDataSet{
			ManagementTLVHead: protocol.ManagementTLVHead{TLVHead: protocol.TLVHead{TLVType: protocol.TLVManagement}, ManagementID: protocol.IDPortDataSet},
			PortIdentity:      protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(s.st.ClockIdentity), PortNumber: 1},
			PortState:         s.st.PortState, VersionNumber: 2}}
		sub.seq++
		b, err := m.MarshalBinary()
		if err != nil {
			continue
		}
		binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
		binary.BigEndian.PutUint16(b[50:52], uint16(len(b)-52))
		if _, err := s.conn.WriteToUnix(b, sub.addr); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// The subscriber is gone: ptp4l keeps it until it expires;
			// so do we.
			continue
		}
		s.notes++
	}
}

// portDataSet is IEEE 1588 portDS as ptp4l sends it (ds.h struct portDS).
type portDataSet struct {
	protocol.ManagementTLVHead
	PortIdentity            protocol.PortIdentity
	PortState               uint8
	LogMinDelayReqInterval  int8
	PeerMeanPathDelay       int64
	LogAnnounceInterval     int8
	AnnounceReceiptTimeout  uint8
	LogSyncInterval         int8
	DelayMechanism          uint8
	LogMinPdelayReqInterval int8
	VersionNumber           uint8
}
