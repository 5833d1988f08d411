//go:build fastdds

package fastdds

/*
#cgo CXXFLAGS: -std=c++14 -O2
#cgo LDFLAGS: -lfastrtps -lfastcdr -lstdc++
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/hilrig/hilrig/internal/ddsshm"
)

// Version is the Fast DDS release the adapter is built against.
const Version = "2.9.1"

// Transport is the one transport a participant uses.
type Transport int

// Transports.
const (
	UDP     Transport = iota // UDPv4, loopback only
	SHM                      // shared memory for data, UDPv4 on loopback beside it
	SHMOnly                  // shared memory only, discovery too (no network between the processes)
)

// Name is the middleware name of a transport (Start.Middleware).
func (t Transport) Name() string {
	if t == SHM || t == SHMOnly {
		return "fastdds-shm"
	}
	return "fastdds-udp"
}

// Config configures the participant.
type Config struct {
	// Domain is the DDS domain id (0..232).
	Domain    uint32
	Transport Transport
	// ShmSegment is the shared-memory segment size in bytes (SHM);
	// default 32 MiB, room for a history of 1 MiB samples.
	ShmSegment uint32
	// Address is the only local address UDP may use (default 127.0.0.1);
	// discovery is unicast to Peers (default 127.0.0.1; Address is added).
	Address string
	Peers   []string
}

// Describe is the report line for cfg.
func (c Config) Describe() string {
	addr, peers := c.Address, strings.Join(c.Peers, ",")
	if addr == "" {
		addr = "127.0.0.1"
	}
	if peers == "" {
		peers = "127.0.0.1"
	}
	tr := fmt.Sprintf("UDPv4 on %s only (interface whitelist), unicast discovery to %s, no multicast, 4 MiB socket buffers", addr, peers)
	if c.Transport == SHMOnly {
		tr = fmt.Sprintf("shared-memory transport only (segment %d B), discovery over shared memory (the boards share /dev/shm but no network)", c.ShmSegment)
	} else if c.Transport == SHM {
		tr = fmt.Sprintf("shared-memory transport for data (segment %d B) beside UDPv4 on %s (Fast DDS's default pair), unicast discovery to %s, no multicast", c.ShmSegment, addr, peers)
	}
	return fmt.Sprintf("fastdds %s (C++ API, raw-bytes TopicDataType): %s; builtin transports off; data sharing off; intraprocess delivery off (ends in one process use the transport too); synchronous publish (asynchronous above 64 KB max payload: fragmentation); preallocated-with-realloc history; domain %d", Version, tr, c.Domain)
}

// Peer is one participant with one publisher and one subscriber.
type Peer struct {
	cfg Config
	p   *C.hlr_fd_peer
}

func cerr(buf []byte) string {
	for i, b := range buf {
		if b == 0 {
			return string(buf[:i])
		}
	}
	return string(buf)
}

// Open creates the participant.
func Open(cfg Config) (*Peer, error) {
	if cfg.Domain > 232 {
		return nil, fmt.Errorf("fastdds: domain %d: want 0..232", cfg.Domain)
	}
	if cfg.ShmSegment == 0 {
		cfg.ShmSegment = 32 << 20
	}
	// An XML profile named by the environment would apply on top: ours
	// is explicit so the confinement cannot be overridden.
	os.Unsetenv("FASTRTPS_DEFAULT_PROFILES_FILE")
	os.Unsetenv("FASTDDS_DEFAULT_PROFILES_FILE")
	os.Setenv("SKIP_DEFAULT_XML", "1")
	errb := make([]byte, 256)
	var addr *C.char
	if cfg.Address != "" {
		addr = C.CString(cfg.Address)
		defer C.free(unsafe.Pointer(addr))
	}
	cpeers := C.malloc(C.size_t(max(len(cfg.Peers), 1)) * C.size_t(unsafe.Sizeof((*C.char)(nil))))
	defer C.free(cpeers)
	pv := unsafe.Slice((**C.char)(cpeers), max(len(cfg.Peers), 1))
	for i, a := range cfg.Peers {
		pv[i] = C.CString(a)
		defer C.free(unsafe.Pointer(pv[i]))
	}
	p := C.hlr_fd_open(C.uint32_t(cfg.Domain), C.int(cfg.Transport), C.uint32_t(cfg.ShmSegment), addr, (**C.char)(cpeers), C.int(len(cfg.Peers)), (*C.char)(unsafe.Pointer(&errb[0])), C.int(len(errb)))
	if p == nil {
		return nil, fmt.Errorf("fastdds: participant on domain %d (%s): %s", cfg.Domain, cfg.Transport.Name(), cerr(errb))
	}
	return &Peer{cfg: cfg, p: p}, nil
}

// Describe is the report line: version, configuration, transport.
func (p *Peer) Describe() string { return p.cfg.Describe() }

// ShmFiles returns the Fast DDS shared-memory segments this process holds
// in /dev/shm (agent.PeerShmFiles): a SIGKILLed participant leaves them
// all, and the controller removes them afterwards on the board.
func (p *Peer) ShmFiles() ([]string, error) { return ddsshm.Files(os.Getpid(), ddsshm.Dir) }

// Close deletes the participant and everything it made.
func (p *Peer) Close() error {
	C.hlr_fd_close(p.p)
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Writer is one DataWriter of raw bytes, or of a ROS 2 topic's messages
// (ros: NewROS2Writer).
type Writer struct {
	p   *Peer
	w   *C.hlr_fd_writer
	ros bool
}

// NewWriter opens a writer on topic with hilrig's QoS mapping.
func (p *Peer) NewWriter(topic string, reliable bool, depth, maxPayload int) (*Writer, error) {
	t := C.CString(ddsTopic(topic))
	defer C.free(unsafe.Pointer(t))
	errb := make([]byte, 256)
	w := C.hlr_fd_writer_new(p.p, t, cbool(reliable), C.int(depth), C.uint32_t(maxPayload), (*C.char)(unsafe.Pointer(&errb[0])), C.int(len(errb)))
	if w == nil {
		return nil, fmt.Errorf("fastdds: %s", cerr(errb))
	}
	return &Writer{p: p, w: w}, nil
}

// Matched is the number of matched readers (agent.PeerMatcher).
func (w *Writer) Matched() (int, error) {
	n := int(C.hlr_fd_matched(w.w))
	if n < 0 {
		return 0, errors.New("fastdds: get_publication_matched_status failed")
	}
	return n, nil
}

// Write stamps payload[0:24) in C right before DataWriter::write and
// writes it. 0 allocations on the Go side.
// A ROS 2 writer stamps the message's header stamp (payload[4:12)) instead
// and ignores seq.
func (w *Writer) Write(payload []byte, seq uint64, clock int32) error {
	if w.ros {
		return w.writeROS2(payload, clock)
	}
	if len(payload) < 24 {
		return errors.New("fastdds: payload shorter than the 24-byte header")
	}
	switch C.hlr_fd_write(w.w, (*C.uint8_t)(unsafe.Pointer(&payload[0])), C.uint32_t(len(payload)), C.uint64_t(seq), C.int(clock)) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("fastdds: write %d: %w", seq, os.ErrDeadlineExceeded)
	}
	return fmt.Errorf("fastdds: write %d failed", seq)
}

// Close deletes the writer.
func (w *Writer) Close() error {
	C.hlr_fd_writer_free(w.p.p, w.w)
	return nil
}

// Reader is one DataReader of raw bytes.
type Reader struct {
	p *Peer
	r *C.hlr_fd_reader
}

// NewReader opens a reader on topic; spin polls take_next_sample instead
// of sleeping in wait_for_unread_message.
func (p *Peer) NewReader(topic string, reliable bool, depth, maxPayload int, spin bool) (*Reader, error) {
	t := C.CString(ddsTopic(topic))
	defer C.free(unsafe.Pointer(t))
	errb := make([]byte, 256)
	r := C.hlr_fd_reader_new(p.p, t, cbool(reliable), C.int(depth), C.uint32_t(maxPayload), cbool(spin), (*C.char)(unsafe.Pointer(&errb[0])), C.int(len(errb)))
	if r == nil {
		return nil, fmt.Errorf("fastdds: %s", cerr(errb))
	}
	return &Reader{p: p, r: r}, nil
}

// Take waits up to timeout for a sample, deserialised (one copy) into the
// reader's buffer, valid until the next Take.
func (r *Reader) Take(timeout time.Duration) ([]byte, int64, error) {
	n := C.hlr_fd_take(r.r, C.int64_t(timeout))
	if n < 0 {
		return nil, 0, errors.New("fastdds: take_next_sample failed")
	}
	if n == 0 {
		return nil, 0, nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(r.r.data)), int(r.r.len)), int64(r.r.recv), nil
}

// Release: nothing is loaned (the sample was copied out).
func (r *Reader) Release() {}

// Close deletes the reader.
func (r *Reader) Close() error {
	C.hlr_fd_reader_free(r.p.p, r.r)
	return nil
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
	n := int(C.hlr_fd_reader_matched(r.r))
	if n < 0 {
		return 0, errors.New("fastdds: get_subscription_matched_status failed")
	}
	return n, nil
}
