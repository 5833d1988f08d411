//go:build cyclonedds

package cyclonedds

/*
#cgo pkg-config: CycloneDDS
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Name is the middleware name endpoints select (Start.Middleware).
const Name = "cyclonedds"

// Version is the Cyclone DDS release the adapter is built against.
const Version = "0.10.2"

// Config configures the participant.
type Config struct {
	// Domain is the DDS domain id (0..232).
	Domain uint32
	// Address is the address of the only network interface Cyclone may
	// use (default: the interface "lo"); discovery is unicast to Peers
	// (default 127.0.0.1; Address is added), multicast is off — the rig's
	// rule for every DDS (docs/peers.md).
	Address string
	Peers   []string
}

func (c Config) iface() string {
	if c.Address == "" {
		return `name="lo"`
	}
	return fmt.Sprintf("address=%q", c.Address)
}

func (c Config) peersXML() string {
	var b strings.Builder
	for _, p := range c.Peers {
		fmt.Fprintf(&b, "<Peer address=%q/>", p)
	}
	return b.String()
}

// xml is Cyclone's configuration: confined to one interface without
// multicast, unicast discovery, and the low-latency/large-sample settings
// of Cyclone's own guide: 64 KiB datagrams on loopback (fewer fragments
// for 4 KiB..1 MiB), synchronous delivery for every writer (no hand-off to
// the delivery thread), large socket buffers, no shared memory (Debian's
// iceoryx-linked build does not deliver through it, peers/README).
func (c Config) xml() string {
	return fmt.Sprintf(`<CycloneDDS><Domain id="any">
<General><Interfaces><NetworkInterface %s multicast="false"/></Interfaces>
<AllowMulticast>false</AllowMulticast><MaxMessageSize>65500B</MaxMessageSize><FragmentSize>63000B</FragmentSize></General>
<Discovery><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>30</MaxAutoParticipantIndex>
<Peers>%s</Peers></Discovery>
<Internal><SynchronousDeliveryPriorityThreshold>0</SynchronousDeliveryPriorityThreshold>
<SocketReceiveBufferSize min="4MB"/><SocketSendBufferSize min="2MB"/></Internal>
</Domain></CycloneDDS>`, c.iface(), c.peersXML())
}

// Describe is the report line for cfg.
func (c Config) Describe() string {
	on := "lo"
	if c.Address != "" {
		on = c.Address
	}
	return fmt.Sprintf("cyclonedds %s (C API): UDP on %s only, unicast discovery to %s, no multicast, no SHM; 64 KiB datagrams, synchronous delivery, loaned take; the reader waits in a waitset through a blocking cgo call, one thread hand-off more than ddsperf's default listener (docs/peers.md, Against the peer's own tool); domain %d", Version, on, strings.Join(c.Peers, ","), c.Domain)
}

// Peer is one participant. Safe for concurrent use (each writer/reader
// is used by one goroutine).
type Peer struct {
	cfg Config
	pp  C.dds_entity_t
	mu  sync.Mutex
}

// Open creates the domain and participant.
func Open(cfg Config) (*Peer, error) {
	if cfg.Address == "" && len(cfg.Peers) == 0 {
		cfg.Peers = []string{"127.0.0.1"}
	}
	if cfg.Address != "" && !slices.Contains(cfg.Peers, cfg.Address) {
		cfg.Peers = append(cfg.Peers, cfg.Address)
	}
	if cfg.Domain > 232 {
		return nil, fmt.Errorf("cyclonedds: domain %d: want 0..232", cfg.Domain)
	}
	// CYCLONEDDS_URI would be merged into the configuration; ours is
	// explicit so the confinement cannot be overridden by the environment.
	os.Unsetenv("CYCLONEDDS_URI")
	x := C.CString(cfg.xml())
	defer C.free(unsafe.Pointer(x))
	pp := C.hlr_cd_participant(C.uint32_t(cfg.Domain), x)
	if pp < 0 {
		return nil, fmt.Errorf("cyclonedds: participant on domain %d: %w", cfg.Domain, ddsErr(C.int(pp)))
	}
	return &Peer{cfg: cfg, pp: pp}, nil
}

func ddsErr(rc C.int) error {
	return fmt.Errorf("dds error %d (%s)", int(rc), C.GoString(C.hlr_cd_err(rc)))
}

// Describe is the report line: version, configuration, transport.
func (p *Peer) Describe() string { return p.cfg.Describe() }

// Close deletes the participant and everything it made.
func (p *Peer) Close() error {
	if rc := C.dds_delete(p.pp); rc < 0 {
		return fmt.Errorf("cyclonedds: delete participant: %w", ddsErr(C.int(rc)))
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Writer is one DDS writer of raw bytes, or of a ROS 2 topic's messages
// (NewROS2Writer).
type Writer struct {
	w   C.dds_entity_t
	ros *C.hlr_cd_ros2_writer
}

// NewWriter opens a writer on topic with hilrig's QoS mapping.
func (p *Peer) NewWriter(topic string, reliable bool, depth, maxPayload int) (*Writer, error) {
	t := C.CString(ddsTopic(topic))
	defer C.free(unsafe.Pointer(t))
	w := C.hlr_cd_writer(p.pp, t, cbool(reliable), C.int(depth))
	if w < 0 {
		return nil, fmt.Errorf("cyclonedds: writer on %q: %w", topic, ddsErr(C.int(w)))
	}
	return &Writer{w: w}, nil
}

// ErrTimeout wraps a reliable write that blocked past its limit.
var ErrTimeout = os.ErrDeadlineExceeded

// Write stamps payload[0:24) (seq, CLOCK_MONOTONIC, clock) in C right
// before dds_write and writes it. A ROS 2 writer instead stamps the
// message's header stamp (payload[4:12): int32 sec, uint32 nanosec of
// clock) right before dds_writecdr and ignores seq. 0 allocations.
func (w *Writer) Write(payload []byte, seq uint64, clock int32) error {
	if w.ros != nil {
		return w.writeROS2(payload, clock)
	}
	if len(payload) < 24 {
		return errors.New("cyclonedds: payload shorter than the 24-byte header")
	}
	rc := C.hlr_cd_write(w.w, (*C.uint8_t)(unsafe.Pointer(&payload[0])), C.uint32_t(len(payload)), C.uint64_t(seq), C.int(clock))
	if rc == C.DDS_RETCODE_TIMEOUT {
		return fmt.Errorf("cyclonedds: write %d: %w", seq, ErrTimeout)
	}
	if rc < 0 {
		return fmt.Errorf("cyclonedds: write %d: %w", seq, ddsErr(C.int(rc)))
	}
	return nil
}

// Close deletes the writer.
func (w *Writer) Close() error {
	if w.ros != nil {
		C.hlr_cd_ros2_writer_free(w.ros)
		w.ros = nil
		return nil
	}
	C.dds_delete(w.w)
	return nil
}

// Reader is one DDS reader of raw bytes.
type Reader struct {
	r *C.hlr_cd_reader
}

// NewReader opens a reader on topic; spin polls dds_take instead of
// sleeping in a waitset.
func (p *Peer) NewReader(topic string, reliable bool, depth, maxPayload int, spin bool) (*Reader, error) {
	t := C.CString(ddsTopic(topic))
	defer C.free(unsafe.Pointer(t))
	var rc C.dds_return_t
	r := C.hlr_cd_reader_new(p.pp, t, cbool(reliable), C.int(depth), cbool(spin), &rc)
	if r == nil {
		return nil, fmt.Errorf("cyclonedds: reader on %q: %w", topic, ddsErr(C.int(rc)))
	}
	return &Reader{r: r}, nil
}

// Take waits up to timeout for a sample; the bytes are Cyclone's loan,
// valid until Release. 0 allocations.
func (r *Reader) Take(timeout time.Duration) ([]byte, int64, error) {
	n := C.hlr_cd_take(r.r, C.int64_t(timeout))
	if n < 0 {
		return nil, 0, fmt.Errorf("cyclonedds: take: %w", ddsErr(n))
	}
	if n == 0 {
		return nil, 0, nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(r.r.data)), int(r.r.len)), int64(r.r.recv), nil
}

// Release returns the loan of the last Take.
func (r *Reader) Release() { C.hlr_cd_release(r.r) }

// Close deletes the reader, its waitset and condition.
func (r *Reader) Close() error {
	C.hlr_cd_reader_free(r.r)
	r.r = nil
	return nil
}

// Matched is the number of readers matched to the writer (agent.PeerMatcher).
func (w *Writer) Matched() (int, error) {
	var st C.dds_publication_matched_status_t
	if rc := C.dds_get_publication_matched_status(w.w, &st); rc < 0 {
		return 0, fmt.Errorf("cyclonedds: matched status: %w", ddsErr(C.int(rc)))
	}
	return int(st.current_count), nil
}

// ddsTopic maps a hilrig topic ([A-Za-z0-9._/-]) to a DDS topic name,
// which allows only [A-Za-z0-9_/]: '.' and '-' become '_'. Both ends map
// alike.
func ddsTopic(t string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' {
			return '_'
		}
		return r
	}, t)
}

// Matched is the number of writers matched to the reader (agent.PeerMatcher).
func (r *Reader) Matched() (int, error) {
	var st C.dds_subscription_matched_status_t
	if rc := C.dds_get_subscription_matched_status(r.r.rd, &st); rc < 0 {
		return 0, fmt.Errorf("cyclonedds: matched status: %w", ddsErr(C.int(rc)))
	}
	return int(st.current_count), nil
}
