package bridge

import (
	"testing"

	"github.com/hilrig/hilrig/middleware"
)

type sinkWriter struct{ n int }

func (s *sinkWriter) Write([]byte, uint64, int32) error { return nil }
func (s *sinkWriter) Forward([]byte) error              { s.n++; return nil }
func (s *sinkWriter) Close() error                      { return nil }

// TestForwardAllocs: forwarding one message either way allocates nothing
// (the health record included).
func TestForwardAllocs(t *testing.T) {
	node, err := middleware.OpenNode("alloc", &middleware.NodeOptions{Domain: "bralloc", ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	pub, err := node.NewPublisher(middleware.Contract{Topic: "x", MaxPayload: 512, Transport: middleware.TransportShm}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	sink := &sinkWriter{}
	f := &forwarder{h: newHealth(Topic{}), w: sink, pub: pub}
	m := &middleware.Message{Payload: make([]byte, 324), RecvMono: middleware.MonoNow()}
	data := make([]byte, 324)
	if n := testing.AllocsPerRun(200, func() {
		_ = f.toROS(m)
		f.fromOne(data, middleware.MonoNow())
	}); n != 0 {
		t.Errorf("%v allocs per message pair", n)
	}
	if fw, dr := f.h.Counts(); fw < 400 || dr != 0 || sink.n < 200 {
		t.Errorf("forwarded %d dropped %d sink %d", fw, dr, sink.n)
	}
}
