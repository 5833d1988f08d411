package dut

import (
	"encoding/binary"
	"testing"
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
