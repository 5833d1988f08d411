// Package bridge forwards named topics between hilrig's bus (shared
// memory or UDP, middleware/) and a ROS 2 graph on a DDS peer (issue 33,
// scope 3), both ways, with each topic's ROS 2 type: a hilrig topic's
// payloads are the type's XCDR1 encoding (encapsulation header
// included), forwarded as they are — the header stamp a publisher set
// stays the message's stamp on the other side.
//
// The DDS side is agent.PeerROS2 (a peer adapter of peers/, cgo): this
// package has no cgo itself; the bridge runs in the peer binary
// (`hilrig-peer bridge`), which `hilrig bridge` execs, so the default
// hilrig binary stays CGO-free (docs/ros2.md).
//
// Per message the bridge allocates nothing (TestForwardAllocs): a hilrig
// message is written to DDS from the subscriber's slot, a DDS sample is
// sent to hilrig from the reader's buffer. Every topic keeps a health
// record — forwarded, dropped, latency added — that Run prints as one
// line per topic every health period.
package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// Direction is which way a topic is forwarded.
type Direction uint8

// Directions.
const (
	// ToROS: hilrig's topic → the ROS 2 topic.
	ToROS Direction = iota
	// FromROS: the ROS 2 topic → hilrig's topic.
	FromROS
)

// String is "to_ros" or "from_ros".
func (d Direction) String() string {
	switch d {
	case ToROS:
		return "to_ros"
	case FromROS:
		return "from_ros"
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

// MarshalText is String; a value outside the enumeration is an error.
func (d Direction) MarshalText() ([]byte, error) {
	if d > FromROS {
		return nil, fmt.Errorf("bridge: %v: no such direction", d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads "to_ros" (or "") and "from_ros".
func (d *Direction) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "to_ros":
		*d = ToROS
	case "from_ros":
		*d = FromROS
	default:
		return fmt.Errorf("bridge: direction %q: want to_ros or from_ros", b)
	}
	return nil
}

// Transport is hilrig's transport of a bridged topic.
type Transport uint8

// Transports.
const (
	Shm Transport = iota // shared memory (default)
	UDP                  // UDP (Hilrig.UDP: listen address or peers)
)

// String is "shm" or "udp".
func (t Transport) String() string {
	if t == UDP {
		return "udp"
	}
	return "shm"
}

// MarshalText is String.
func (t Transport) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads "shm" (or "") and "udp".
func (t *Transport) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "shm":
		*t = Shm
	case "udp":
		*t = UDP
	default:
		return fmt.Errorf("bridge: transport %q: want shm or udp", b)
	}
	return nil
}

// Hilrig is the hilrig side of a bridged topic.
type Hilrig struct {
	// Topic is hilrig's topic name ([A-Za-z0-9._/-], 1..64 bytes).
	Topic     string    `json:"topic"`
	Transport Transport `json:"transport,omitempty"`
	// MaxPayload bounds a message (the ROS 2 encoding, header included).
	MaxPayload int `json:"max_payload"`
	// Reliable makes the topic reliable (default best effort); Depth is
	// its history depth (0: the middleware's default).
	Reliable bool `json:"reliable,omitempty"`
	Depth    int  `json:"depth,omitempty"`
	// UDP configures the UDP transport: a to_ros topic's bridge listens
	// on UDP.Listen, a from_ros topic's bridge sends to UDP.Peers.
	UDP middleware.UDPConfig `json:"udp,omitempty"`
}

// Contract is hilrig's contract of the topic.
func (h Hilrig) Contract() middleware.Contract {
	c := middleware.Contract{Topic: h.Topic, MaxPayload: h.MaxPayload, Depth: h.Depth, Transport: middleware.TransportShm, UDP: h.UDP}
	if h.Transport == UDP {
		c.Transport = middleware.TransportUDP
	}
	if h.Reliable {
		c.Reliability = middleware.Reliable
	}
	return c
}

// Topic is one forwarded topic.
type Topic struct {
	// ROS is the ROS 2 side: name, type, QoS profile.
	ROS rostopic.Topic `json:"ros"`
	// Hilrig is hilrig's side.
	Hilrig Hilrig `json:"hilrig"`
	// Direction: to_ros (default) or from_ros.
	Direction Direction `json:"direction"`
}

// Config is a bridge's configuration file (JSON).
type Config struct {
	// Domain is hilrig's middleware domain (segment namespace); default "0".
	Domain string `json:"domain,omitempty"`
	// ShmDir is where hilrig's segments live; default /dev/shm.
	ShmDir string  `json:"shm_dir,omitempty"`
	Topics []Topic `json:"topics"`
}

// LoadConfig reads a JSON configuration file. Errors name the file and
// the topic.
func LoadConfig(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("bridge: %s: %w", file, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("bridge: %s: %w", file, err)
	}
	return &c, nil
}

// Validate checks every topic: the ROS 2 side's form, a hilrig topic and
// a max payload.
func (c *Config) Validate() error {
	if len(c.Topics) == 0 {
		return errors.New("no topics")
	}
	for i, t := range c.Topics {
		if err := t.ROS.Validate(); err != nil {
			return fmt.Errorf("topics[%d]: %w", i, err)
		}
		if t.Hilrig.Topic == "" || t.Hilrig.MaxPayload < 4 {
			return fmt.Errorf("topics[%d] (%s): hilrig.topic and hilrig.max_payload (≥ 4) are required", i, t.ROS.Name)
		}
		if t.Direction > FromROS {
			return fmt.Errorf("topics[%d] (%s): %v", i, t.ROS.Name, t.Direction)
		}
	}
	return nil
}

// Health is one topic's record. Safe for concurrent use.
type Health struct {
	Topic Topic
	mu    sync.Mutex
	// forwarded and dropped count messages; added is the latency the
	// bridge adds: from the source's receive stamp (hilrig's subscriber,
	// the DDS take; CLOCK_MONOTONIC) to the forward call's return.
	forwarded, dropped uint64
	added              *report.Histogram
	lastErr            error
}

func newHealth(t Topic) *Health { return &Health{Topic: t, added: report.NewHistogram()} }

// record counts one message: forwarded with latency added ns, or dropped
// by err. 0 allocs.
func (h *Health) record(added int64, err error) {
	h.mu.Lock()
	if err != nil {
		h.dropped++
		h.lastErr = err
	} else {
		h.forwarded++
		h.added.Record(added)
	}
	h.mu.Unlock()
}

// Counts returns forwarded and dropped so far.
func (h *Health) Counts() (forwarded, dropped uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.forwarded, h.dropped
}

// Added is the latency the bridge added so far, ns: p50, p99, max.
func (h *Health) Added() (p50, p99, maxNs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.added.ValueAtQuantile(50), h.added.ValueAtQuantile(99), h.added.ValueAtQuantile(100)
}

// Line is the topic's health line: direction, names, forwarded, dropped,
// the latency added (p50, p99, max) and the last error.
func (h *Health) Line() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := fmt.Sprintf("bridge %s %s (%s) <-> hilrig %s: forwarded %d, dropped %d", h.Topic.Direction, h.Topic.ROS.Name, h.Topic.ROS.Type, h.Topic.Hilrig.Topic, h.forwarded, h.dropped)
	if h.added.Count() > 0 {
		s += fmt.Sprintf(", added p50 %s p99 %s max %s", report.FormatNs(h.added.ValueAtQuantile(50)), report.FormatNs(h.added.ValueAtQuantile(99)), report.FormatNs(h.added.ValueAtQuantile(100)))
	}
	if h.lastErr != nil {
		s += ", last error: " + h.lastErr.Error()
	}
	return s
}

// Bridge is a running set of forwarded topics.
type Bridge struct {
	node   *middleware.Node
	dds    agent.PeerROS2
	topics []*forwarder
}

// forwarder is one topic's two ends.
type forwarder struct {
	h   *Health
	sub *middleware.Subscriber // ToROS
	w   agent.PeerForwarder
	wc  agent.PeerWriter
	r   agent.PeerReader // FromROS
	pub *middleware.Publisher
}

// New opens every topic's ends on node (hilrig) and dds (ROS 2). On error
// what was opened is closed.
func New(node *middleware.Node, dds agent.PeerROS2, topics []Topic) (*Bridge, error) {
	b := &Bridge{node: node, dds: dds}
	for _, t := range topics {
		f, err := b.open(t)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("bridge: %s: %w", t.ROS, err)
		}
		b.topics = append(b.topics, f)
	}
	return b, nil
}

func (b *Bridge) open(t Topic) (*forwarder, error) {
	p := t.ROS.Profile
	f := &forwarder{h: newHealth(t)}
	if t.Direction == ToROS {
		w, err := b.dds.NewROS2Writer(t.ROS.DDSTopic(), t.ROS.DDSType(), p.Reliable(), p.Depth(), t.Hilrig.MaxPayload)
		if err != nil {
			return nil, err
		}
		fw, ok := w.(agent.PeerForwarder)
		if !ok {
			w.Close()
			return nil, errors.New("the DDS writer cannot forward (no Forward)")
		}
		f.w, f.wc = fw, w
		if f.sub, err = b.node.NewSubscriber(t.Hilrig.Contract(), nil); err != nil {
			w.Close()
			return nil, err
		}
		return f, nil
	}
	r, err := b.dds.NewROS2Reader(t.ROS.DDSTopic(), t.ROS.DDSType(), p.Reliable(), p.Depth(), t.Hilrig.MaxPayload, false)
	if err != nil {
		return nil, err
	}
	f.r = r
	if f.pub, err = b.node.NewPublisher(t.Hilrig.Contract(), nil); err != nil {
		r.Close()
		return nil, err
	}
	return f, nil
}

// Health returns every topic's health record, in configuration order.
func (b *Bridge) Health() []*Health {
	out := make([]*Health, len(b.topics))
	for i, f := range b.topics {
		out[i] = f.h
	}
	return out
}

// Matched is how many topics' DDS ends (the writer of a to_ros topic,
// the reader of a from_ros one) have matched a ROS 2 counterpart; ends
// that cannot tell count as matched. Under ROS 2's volatile profiles what
// a writer forwards before its reader's side matched is lost, as between
// ROS 2 nodes. Does not block.
func (b *Bridge) Matched() (int, error) {
	n := 0
	for _, f := range b.topics {
		var end any = f.wc
		if f.r != nil {
			end = f.r
		}
		m, ok := end.(agent.PeerMatcher)
		if !ok {
			n++
			continue
		}
		c, err := m.Matched()
		if err != nil {
			return 0, fmt.Errorf("bridge: %s: %w", f.h.Topic.ROS, err)
		}
		if c > 0 {
			n++
		}
	}
	return n, nil
}

// Close closes every end.
func (b *Bridge) Close() {
	for _, f := range b.topics {
		if f.sub != nil {
			f.sub.Close()
		}
		if f.wc != nil {
			f.wc.Close()
		}
		if f.r != nil {
			f.r.Close()
		}
		if f.pub != nil {
			f.pub.Close()
		}
	}
	b.topics = nil
}

// poll bounds one DDS take so a forwarder notices ctx ending.
const poll = 20 * time.Millisecond

// Run forwards every topic until ctx ends (nil) or a topic's source
// fails (that error), writing each topic's health line to health every
// period (and once more at the end). Blocks.
func (b *Bridge) Run(ctx context.Context, health io.Writer, period time.Duration) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, f := range b.topics {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if f.sub != nil {
				err = f.sub.Receive(ctx, f.toROS)
			} else {
				err = f.fromROS(ctx)
			}
			if err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("bridge: %s: %w", f.h.Topic.ROS, err))
			}
		}()
	}
	t := time.NewTicker(period)
	defer t.Stop()
	printAll := func() {
		for _, f := range b.topics {
			fmt.Fprintln(health, f.h.Line())
		}
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C:
			printAll()
		}
	}
	wg.Wait()
	printAll()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// toROS writes one hilrig message to DDS as it is. A failed write is a
// drop, not the end. 0 allocs.
func (f *forwarder) toROS(m *middleware.Message) error {
	err := f.w.Forward(m.Payload)
	f.h.record(middleware.MonoNow()-m.RecvMono, err)
	return nil
}

// fromROS sends every DDS sample to hilrig until ctx ends or the reader
// fails. 0 allocs per message.
func (f *forwarder) fromROS(ctx context.Context) error {
	for ctx.Err() == nil {
		data, recv, err := f.r.Take(poll)
		if err != nil {
			return err
		}
		if data == nil {
			continue
		}
		f.fromOne(data, recv)
		f.r.Release()
	}
	return nil
}

// fromOne sends one DDS sample, received at recv (CLOCK_MONOTONIC ns), to
// hilrig. A failed send is a drop. 0 allocs.
func (f *forwarder) fromOne(data []byte, recv int64) {
	err := f.pub.Send(data)
	f.h.record(middleware.MonoNow()-recv, err)
}
