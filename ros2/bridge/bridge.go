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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/report"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
)

// The configuration's types (ros2/bridgeconf, where the controller can
// write them without importing the agent).
type (
	// Direction is which way a topic is forwarded.
	Direction = bridgeconf.Direction
	// Transport is hilrig's transport of a bridged topic.
	Transport = bridgeconf.Transport
	// Hilrig is the hilrig side of a bridged topic.
	Hilrig = bridgeconf.Hilrig
	// Topic is one forwarded topic.
	Topic = bridgeconf.Topic
	// Config is a bridge's configuration file (JSON).
	Config = bridgeconf.Config
)

// Directions and transports.
const (
	ToROS   = bridgeconf.ToROS
	FromROS = bridgeconf.FromROS
	Shm     = bridgeconf.Shm
	UDP     = bridgeconf.UDP
)

// LoadConfig reads a configuration file (bridgeconf.Load).
func LoadConfig(file string) (*Config, error) { return bridgeconf.Load(file) }

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

// Record is the topic's health as values (bridgeconf.HealthRecord).
func (h *Health) Record() bridgeconf.HealthRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := bridgeconf.HealthRecord{Direction: h.Topic.Direction, ROS: h.Topic.ROS.Name, Type: h.Topic.ROS.Type, Hilrig: h.Topic.Hilrig.Topic,
		Forwarded: h.forwarded, Dropped: h.dropped}
	if h.added.Count() > 0 {
		r.AddedP50Ns, r.AddedP99Ns, r.AddedMaxNs = h.added.ValueAtQuantile(50), h.added.ValueAtQuantile(99), h.added.ValueAtQuantile(100)
	}
	if h.lastErr != nil {
		r.LastError = h.lastErr.Error()
	}
	return r
}

// Bridge is a running set of forwarded topics.
type Bridge struct {
	// HealthJSON makes Run write each topic's health as a JSON
	// bridgeconf.HealthRecord a line instead of the text line. Set before
	// Run.
	HealthJSON bool

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
			if !b.HealthJSON {
				fmt.Fprintln(health, f.h.Line())
				continue
			}
			if line, err := json.Marshal(f.h.Record()); err == nil {
				fmt.Fprintf(health, "%s\n", line)
			}
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
