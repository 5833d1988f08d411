package agent

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/agent/internal/sys"
	"github.com/hilrig/hilrig/middleware"
	"github.com/hilrig/hilrig/ros2/rostopic"
)

// TestROS2DeliverAllocs: the agent's ROS 2 receive path (deliverROS)
// allocates nothing and turns the header stamp into the send stamps.
func TestROS2DeliverAllocs(t *testing.T) {
	msg := make([]byte, 64)
	now := sys.Now(sys.ClockRealtime)
	if err := rostopic.PutStamp(msg, now); err != nil {
		t.Fatal(err)
	}
	in := &peerIn{ros: true, clock: sys.ClockRealtime}
	var seq uint64
	var mono int64
	fn := func(m *middleware.Message) error { seq, mono = m.Header.Seq, m.Header.SendMono; return nil }
	if n := testing.AllocsPerRun(100, func() {
		if err := in.deliverROS(msg, 1, fn); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocs", n)
	}
	if seq != in.n || seq < 100 {
		t.Errorf("seq %d after %d messages: want arrival numbering", seq, in.n)
	}
	// SendMono: the stamp moved onto CLOCK_MONOTONIC, so it lies in the
	// recent past of CLOCK_MONOTONIC (the clocks' offset moves by NTP's
	// slew only).
	if d := sys.Now(sys.ClockMonotonic) - mono; d < 0 || d > int64(time.Minute) {
		t.Errorf("SendMono %d is %d ns before now on CLOCK_MONOTONIC", mono, d)
	}
}
