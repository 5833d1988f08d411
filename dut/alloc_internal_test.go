package dut

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/hilrig/hilrig/ros2/rostopic"
)

// The response path runs once per response on the receive goroutine:
// it must not allocate (the buffer is sized before the run).
func TestCollectorAddAllocs(t *testing.T) {
	c := &collector{max: 512, echo: true, offset: 8}
	c.buf = make([]Response, 0, c.max)
	payload := make([]byte, 64)
	var seq uint64
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		binary.LittleEndian.PutUint64(payload[8:], seq)
		c.add(int64(seq), payload)
	})
	if allocs != 0 {
		t.Errorf("collector.add: %g allocs per response, want 0", allocs)
	}
	rs, overflow := c.take()
	if len(rs) != 512 || overflow != int64(seq)-512 || rs[5].Seq != 6 {
		t.Errorf("kept %d, overflow %d of %d, rs[5] %+v: want the first 512 kept, the rest counted", len(rs), overflow, seq, rs[5])
	}
	c.reset()
	c.add(1, payload[:10]) // too short for the sequence number at 8
	if rs, _ := c.take(); len(rs) != 1 || rs[0].Seq != 0 {
		t.Errorf("short payload: %+v, want one response without a sequence number", rs)
	}
	seen := c.count()
	c.add(2, binary.LittleEndian.AppendUint64(make([]byte, 8), probeSeq+3))
	if rs, _ := c.take(); len(rs) != 1 || c.count() != seen+1 {
		t.Errorf("a probe's answer: kept %d, seen %d → %d; want it seen, not kept", len(rs), seen, c.count())
	}
}

// A ROS 2 response's stamp is read on the same path, without allocating;
// stampsToSeq numbers answers by their stimulus, drops a late probe's
// answer (stamped before the first timed stimulus) and leaves a stamp of
// no stimulus unknown.
func TestCollectorStampAllocs(t *testing.T) {
	c := &collector{max: 16, echo: true, stamp: true}
	c.buf = make([]Response, 0, c.max)
	msg := make([]byte, 64)
	ns := int64(5e9)
	allocs := testing.AllocsPerRun(100, func() {
		ns++
		_ = rostopic.PutStamp(msg, ns)
		c.add(ns+10, msg)
	})
	if allocs != 0 {
		t.Errorf("collector.add (stamp): %g allocs per response, want 0", allocs)
	}
	rs, _ := c.take()
	if len(rs) != 16 || int64(rs[0].Seq) != 5e9+1 {
		t.Fatalf("kept %d, first %+v", len(rs), rs[0])
	}
	stimuli := []int64{100, 200, 300}
	got := stampsToSeq(stimuli, []Response{{Mono: 90, Seq: 50}, {Mono: 210, Seq: 200}, {Mono: 305, Seq: 300}, {Mono: 330, Seq: 250}, {Mono: 340, Seq: 100}})
	want := []Response{{Mono: 210, Seq: 2}, {Mono: 305, Seq: 3}, {Mono: 330, Seq: 0}, {Mono: 340, Seq: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("stampsToSeq = %+v, want %+v", got, want)
	}
}
