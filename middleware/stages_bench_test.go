//go:build linux

package middleware_test

import (
	"testing"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// BenchmarkStageStamps measures what the stage stamps cost: one Send +
// Next round on shm with the hooks nil (off, the default) and set (on),
// interleaved in batches of 64 within one run so the shared machine's
// noise falls on both alike. Reported: off_ns/msg, on_ns/msg and their
// ratio on/off, and clock_ns/read, one CLOCK_MONOTONIC read in the same
// run: "on" adds four reads per message (copy start and end, commit,
// wake-up), which is what it costs; "off" leaves the hooks nil, one
// branch per message. Compare ratios from one run, not absolute ns.
func BenchmarkStageStamps(b *testing.B) {
	d := testDomain(b)
	n := openNode(b, "stagebench", d)
	type pair struct {
		pub *middleware.Publisher
		sub *middleware.Subscriber
	}
	var ps middleware.PublishStages
	var rs middleware.ReceiveStages
	mk := func(topic string, on bool) pair {
		c := middleware.Contract{Topic: topic, MaxPayload: 1024, Transport: middleware.TransportShm}
		so, po := &middleware.SubscriberOptions{}, &middleware.PublisherOptions{}
		if on {
			so.Stages = func(s *middleware.ReceiveStages) { rs = *s }
			po.Stages = func(s *middleware.PublishStages) { ps = *s }
		}
		sub, pub := openPairWith(b, n, c, so, c, po)
		return pair{pub, sub}
	}
	on, off := mk("on", true), mk("off", false)
	payload := make([]byte, 256)
	fn := func(*middleware.Message) {}
	const batch = 64
	round := func(p pair) time.Duration { return sendNext(b, p.pub, p.sub, payload, fn, batch) }
	var tOff, tOn, tClock time.Duration
	var msgs int64
	var sink int64
	b.ReportAllocs()
	for b.Loop() {
		tOff += round(off)
		tOn += round(on)
		t0 := time.Now()
		for range batch {
			sink += middleware.MonoNow()
		}
		tClock += time.Since(t0)
		msgs += batch
	}
	if sink == 0 {
		b.Fatal("clock read nothing")
	}
	if ps.Seq == 0 || rs.Seq == 0 {
		b.Fatal("stage hooks never called")
	}
	offNs, onNs := float64(tOff.Nanoseconds())/float64(msgs), float64(tOn.Nanoseconds())/float64(msgs)
	b.ReportMetric(offNs, "off_ns/msg")
	b.ReportMetric(onNs, "on_ns/msg")
	b.ReportMetric(onNs/offNs, "on/off")
	b.ReportMetric(float64(tClock.Nanoseconds())/float64(msgs), "clock_ns/read")
}
