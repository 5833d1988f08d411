//go:build iceoryx

package iceoryx

/*
#cgo CFLAGS: -I/usr/include/iceoryx/v2.0.3
#cgo LDFLAGS: -liceoryx_binding_c -liceoryx_posh -liceoryx_hoofs -liceoryx_platform -lstdc++ -lpthread
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"
	"unsafe"

	"github.com/hilrig/hilrig/peers/iceoryx/roudi"
)

// Name is the middleware name endpoints select (Start.Middleware).
const Name = "iceoryx"

// Version is the iceoryx release the adapter is built against.
const Version = "2.0.3"

// Config configures the runtime.
type Config struct {
	// App is the runtime's name (unique per process on the host).
	App string
	// StartRouDi starts a RouDi when none runs (sized for MaxPayload) and
	// stops it when the peer closes; false requires a running one.
	StartRouDi bool
	MaxPayload int
}

// Peer is this process's iceoryx runtime (one per process).
type Peer struct {
	cfg   Config
	roudi *roudi.RouDi
	desc  string
}

var (
	// The runtime is per process and cannot be re-initialised with
	// another name: opened once.
	initOnce sync.Once
	initName string
)

var appRE = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Open connects this process to RouDi, starting one first if asked and
// none runs. Without a RouDi it fails with ErrNoRouDi instead of blocking
// in iox_runtime_init (which waits for RouDi forever).
func Open(ctx context.Context, cfg Config) (*Peer, error) {
	p := &Peer{cfg: cfg}
	up, err := roudi.Running()
	if err != nil {
		return nil, err
	}
	which := "a running RouDi"
	if !up {
		if !cfg.StartRouDi {
			return nil, fmt.Errorf("%w (start iox-roudi, or let the agent start it)", roudi.ErrNoRouDi)
		}
		r, err := roudi.Start(ctx, max(cfg.MaxPayload, 1<<20))
		switch {
		case errors.Is(err, roudi.ErrRunning):
			// One appeared since Running: use it, as if it had run before.
		case err != nil:
			return nil, err
		default:
			p.roudi = r
			which = fmt.Sprintf("RouDi pid %d started by this agent, mempools up to %d B", r.PID(), max(cfg.MaxPayload, 1<<20))
		}
	}
	name := appRE.ReplaceAllString(cfg.App, "_")
	if name == "" {
		name = "hilrig"
	}
	name = fmt.Sprintf("%.80s_%d", name, os.Getpid())
	initOnce.Do(func() {
		n := C.CString(name)
		defer C.free(unsafe.Pointer(n))
		C.hlr_iox_init(n)
		initName = name
	})
	p.desc = fmt.Sprintf("iceoryx %s (C binding): zero-copy shared memory via %s; publisher copies the payload into a loaned chunk, subscriber reads the chunk in place; runtime %s", Version, which, initName)
	return p, nil
}

// Describe is the report line: version, configuration, transport.
func (p *Peer) Describe() string { return p.desc }

// Close unregisters this process from RouDi (a RouDi that stops sends
// SIGTERM to every process still registered) and stops the RouDi this
// peer started. The runtime cannot be opened again in this process.
func (p *Peer) Close() error {
	Shutdown()
	if p.roudi != nil {
		return p.roudi.Stop()
	}
	return nil
}

var shutdownOnce sync.Once

// Shutdown unregisters this process's runtime from RouDi, once; call it
// before the RouDi stops (it would SIGTERM this process) or at exit.
func Shutdown() {
	shutdownOnce.Do(func() {
		if initName != "" {
			C.hlr_iox_shutdown()
			// The runtime's socket and its lock stay behind otherwise.
			os.Remove("/tmp/" + initName)
			os.Remove("/tmp/" + initName + ".lock")
		}
	})
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// service maps a topic to iceoryx's service/instance/event triple.
func service(topic string) (*C.char, *C.char) {
	return C.CString("hilrig"), C.CString(topic)
}

// Writer is one iceoryx publisher.
type Writer struct{ p *C.hlr_iox_pub }

// NewWriter offers topic.
func (p *Peer) NewWriter(topic string, reliable bool, depth, maxPayload int) (*Writer, error) {
	if len(topic) > 100 {
		return nil, fmt.Errorf("iceoryx: topic %q longer than 100 bytes", topic)
	}
	s, i := service(topic)
	defer C.free(unsafe.Pointer(s))
	defer C.free(unsafe.Pointer(i))
	return &Writer{p: C.hlr_iox_pub_new(s, i, cbool(reliable), C.int(depth))}, nil
}

// Matched reports whether a subscriber is connected (agent.PeerMatcher).
func (w *Writer) Matched() (int, error) { return int(C.hlr_iox_pub_matched(w.p)), nil }

// Write stamps the header's clocks in C at its entry, then loans a chunk,
// copies payload into it and publishes it: the stamp precedes the loan
// (a reliable publisher's wait for a full queue) and the copy, as hilrig's
// copy path stamps at the entry of Send. 0 allocations.
func (w *Writer) Write(payload []byte, seq uint64, clock int32) error {
	if len(payload) < 24 {
		return errors.New("iceoryx: payload shorter than the 24-byte header")
	}
	if rc := C.hlr_iox_write(w.p, (*C.uint8_t)(unsafe.Pointer(&payload[0])), C.uint32_t(len(payload)), C.uint64_t(seq), C.int(clock)); rc != 0 {
		return fmt.Errorf("iceoryx: loan of %d bytes for message %d failed (AllocationResult %d: mempools too small or exhausted)", len(payload), seq, int(rc)-1)
	}
	return nil
}

// Close stops offering.
func (w *Writer) Close() error {
	C.hlr_iox_pub_free(w.p)
	return nil
}

// Reader is one iceoryx subscriber.
type Reader struct{ s *C.hlr_iox_sub }

// NewReader subscribes to topic; depth is the queue capacity (≤ 256);
// spin polls instead of sleeping in a waitset.
func (p *Peer) NewReader(topic string, reliable bool, depth, maxPayload int, spin bool) (*Reader, error) {
	if len(topic) > 100 {
		return nil, fmt.Errorf("iceoryx: topic %q longer than 100 bytes", topic)
	}
	s, i := service(topic)
	defer C.free(unsafe.Pointer(s))
	defer C.free(unsafe.Pointer(i))
	return &Reader{s: C.hlr_iox_sub_new(s, i, cbool(reliable), C.int(depth), cbool(spin))}, nil
}

// Take waits up to timeout for a chunk, read in place until Release.
func (r *Reader) Take(timeout time.Duration) ([]byte, int64, error) {
	n := C.hlr_iox_take(r.s, C.int64_t(timeout))
	if n < 0 {
		return nil, 0, fmt.Errorf("iceoryx: take chunk failed (ChunkReceiveResult %d)", -1-int(n))
	}
	if n == 0 {
		return nil, 0, nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(r.s.data)), int(r.s.len)), int64(r.s.recv), nil
}

// Release returns the last chunk.
func (r *Reader) Release() { C.hlr_iox_release(r.s) }

// Close unsubscribes.
func (r *Reader) Close() error {
	C.hlr_iox_sub_free(r.s)
	return nil
}

// Matched is 1 once a publisher is connected (agent.PeerMatcher).
func (r *Reader) Matched() (int, error) { return int(C.hlr_iox_sub_matched(r.s)), nil }

// ProcessWide is true: a Peer is the process's one iceoryx runtime
// (agent.PeerProcessWide), which cannot be opened per endpoint.
func (p *Peer) ProcessWide() bool { return true }
