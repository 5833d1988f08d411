package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/bridge"
	"github.com/hilrig/hilrig/ros2/bridgeconf"
	"github.com/hilrig/hilrig/ros2/ros2test"
	"github.com/hilrig/hilrig/ros2/rosmsg"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// fakeDDS is an in-memory ROS 2 graph: what a writer forwards on a DDS
// topic reaches every reader of that topic. Safe for concurrent use.
type fakeDDS struct {
	mu      sync.Mutex
	readers map[string][]*fakeReader
}

func newFakeDDS() *fakeDDS { return &fakeDDS{readers: map[string][]*fakeReader{}} }

func (d *fakeDDS) NewROS2Writer(topic, _ string, _ bool, _, _ int) (agent.PeerWriter, error) {
	return &fakeWriter{d: d, topic: topic}, nil
}

func (d *fakeDDS) NewROS2Reader(topic, _ string, _ bool, _, _ int, _ bool) (agent.PeerReader, error) {
	r := &fakeReader{ch: make(chan []byte, 1024)}
	d.mu.Lock()
	d.readers[topic] = append(d.readers[topic], r)
	d.mu.Unlock()
	return r, nil
}

type fakeWriter struct {
	d     *fakeDDS
	topic string
}

func (w *fakeWriter) Write(p []byte, _ uint64, _ int32) error { return w.Forward(p) }
func (w *fakeWriter) Forward(p []byte) error {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	for _, r := range w.d.readers[w.topic] {
		r.ch <- bytes.Clone(p)
	}
	return nil
}
func (w *fakeWriter) Close() error { return nil }
func (w *fakeWriter) Matched() (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	return len(w.d.readers[w.topic]), nil
}

type fakeReader struct{ ch chan []byte }

func (r *fakeReader) Take(timeout time.Duration) ([]byte, int64, error) {
	select {
	case b := <-r.ch:
		return b, middleware.MonoNow(), nil
	case <-time.After(timeout):
		return nil, 0, nil
	}
}
func (r *fakeReader) Release()              {}
func (r *fakeReader) Close() error          { return nil }
func (r *fakeReader) Matched() (int, error) { return 1, nil }

// probe is the test's own ROS 2 node on the DDS side.
type probe interface {
	agent.PeerROS2
}

// awaitMatched waits for x's first match, when x can tell.
func awaitMatched(t *testing.T, x any) {
	t.Helper()
	if m, ok := x.(ros2test.Matcher); ok {
		ros2test.AwaitMatch(t, m)
	}
}

// conform is the bridge's conformance test over a DDS side (the fake, or
// a real peer, with a second participant as the probe): n Imu messages
// published on hilrig reach a ROS 2 reader byte for byte (header stamp
// untouched), n written by a ROS 2 node reach a hilrig subscriber byte
// for byte; every one is counted forwarded, none dropped, each with its
// latency added; the health lines say so.
func conform(t *testing.T, dds agent.PeerROS2, prb probe) {
	const n = 50
	dir := t.TempDir()
	node, err := middleware.OpenNode("bridge", &middleware.NodeOptions{Domain: "brtest", ShmDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	imu := ros2test.Codec(t, "sensor_msgs/Imu")
	id := os.Getpid()
	out := bridge.Topic{ROS: rostopic.Topic{Name: fmt.Sprintf("bridge_test/imu_%d", id), Type: "sensor_msgs/Imu"},
		Hilrig: bridge.Hilrig{Topic: "imu", MaxPayload: 1024, Reliable: true, Depth: 64}}
	in := bridge.Topic{ROS: rostopic.Topic{Name: fmt.Sprintf("bridge_test/cmd_%d", id), Type: "sensor_msgs/Imu"}, Direction: bridge.FromROS,
		Hilrig: bridge.Hilrig{Topic: "cmd", MaxPayload: 1024, Reliable: true, Depth: 64}}
	// The probe's ends first: the bridge's writer then matches a reader
	// that exists, and its reader a writer.
	pr, err := prb.NewROS2Reader(out.ROS.DDSTopic(), out.ROS.DDSType(), true, 10, 1024, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	pw, err := prb.NewROS2Writer(in.ROS.DDSTopic(), in.ROS.DDSType(), true, 10, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	b, err := bridge.New(node, dds, []bridge.Topic{out, in})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var health bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, &health, time.Hour) }()

	sub, err := node.NewSubscriber(in.Hilrig.Contract(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub, err := node.NewPublisher(out.Hilrig.Contract(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	awaitMatched(t, pr)
	awaitMatched(t, pw)
	awaitMatched(t, allMatched{b, 2})

	msg := func(i int) []byte {
		m, err := imu.Append(nil, rosmsg.Msg{"header": rosmsg.Msg{"stamp": rosmsg.Msg{"sec": int32(i), "nanosec": uint32(7)}, "frame_id": "imu_link"},
			"linear_acceleration": rosmsg.Msg{"x": float64(i), "y": 0.5, "z": 9.81}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// hilrig → ROS 2, one message at a time: the profile keeps the last
	// 10 only, so a burst would lose the oldest in the probe's reader.
	for i := 1; i <= n; i++ {
		if err := pub.Send(msg(i)); err != nil {
			t.Fatal(err)
		}
		got := ros2test.TakeOne(t, pr, 20*time.Second)
		if !bytes.Equal(got, msg(i)) {
			t.Fatalf("ROS 2 side, message %d: got % x, want % x (as published on hilrig)", i, got, msg(i))
		}
	}
	// ROS 2 → hilrig, one at a time: written as is (Forward), so the
	// bytes are the test's.
	fw := pw.(agent.PeerForwarder)
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	next := make(chan struct{})
	recvd := make(chan error, 1)
	go func() {
		i := 0
		recvd <- sub.Receive(rctx, func(m *middleware.Message) error {
			i++
			if !bytes.Equal(m.Payload, msg(1000+i)) {
				return fmt.Errorf("hilrig side, message %d: got % x, want % x", i, m.Payload, msg(1000+i))
			}
			if i == n {
				return errDone
			}
			next <- struct{}{}
			return nil
		})
	}()
	for i := 1; i <= n; i++ {
		if err := fw.Forward(msg(1000 + i)); err != nil {
			t.Fatal(err)
		}
		if i == n {
			break
		}
		select {
		case <-next:
		case err := <-recvd:
			t.Fatalf("hilrig subscriber after %d: %v", i, err)
		}
	}
	if err := <-recvd; err != errDone {
		t.Fatalf("hilrig subscriber: %v", err)
	}
	hs := b.Health()
	for _, h := range hs {
		for deadline := time.Now().Add(5 * time.Second); ; {
			f, d := h.Counts()
			if f == n && d == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: forwarded %d dropped %d, want %d and 0", h.Topic.ROS.Name, f, d, n)
			}
			time.Sleep(time.Millisecond) // the forwarder counts after its write returned
		}
	}
	// The same figures as values (what --health-format json writes).
	for _, h := range hs {
		r := h.Record()
		if r.ROS != h.Topic.ROS.Name || r.Direction != h.Topic.Direction || r.Forwarded != n || r.Dropped != 0 ||
			r.AddedP50Ns <= 0 || r.AddedP99Ns < r.AddedP50Ns || r.AddedMaxNs < r.AddedP99Ns {
			t.Errorf("health record %+v: want %s, %d forwarded, 0 dropped, 0 < p50 ≤ p99 ≤ max", r, h.Topic.ROS.Name, n)
		}
		var back bridgeconf.HealthRecord
		if line, err := json.Marshal(r); err != nil || json.Unmarshal(line, &back) != nil || back != r {
			t.Errorf("health record %+v does not survive its JSON line (%s, %v)", r, line, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := health.String()
	for _, want := range []string{"bridge to_ros " + out.ROS.Name, "bridge from_ros " + in.ROS.Name, fmt.Sprintf("forwarded %d, dropped 0, added p50", n)} {
		if !strings.Contains(lines, want) {
			t.Errorf("health lines lack %q:\n%s", want, lines)
		}
	}
}

var errDone = fmt.Errorf("done")

// allMatched is matched once all n of a bridge's DDS ends are.
type allMatched struct {
	b *bridge.Bridge
	n int
}

func (a allMatched) Matched() (int, error) {
	m, err := a.b.Matched()
	if m < a.n {
		m = 0
	}
	return m, err
}

func TestBridgeFake(t *testing.T) {
	d := newFakeDDS()
	conform(t, d, d)
}
