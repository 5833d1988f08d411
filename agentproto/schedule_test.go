package agentproto_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/agentproto"
	"github.com/hilrig/hilrig/middleware"
)

// TestScheduleValidate: a schedule is a publisher's, with as many
// offsets as sizes, offsets from ≥ 0 and non-decreasing, sizes within the
// contract, and a period when Count or a duration loops it; At walks the
// plan and its loops.
func TestScheduleValidate(t *testing.T) {
	start := func(p *agentproto.Schedule, count uint64) agentproto.Start {
		return agentproto.Start{Endpoint: "p", Role: agentproto.Publisher, Payload: 64, Count: count, Schedule: p,
			Contract: middleware.Contract{Topic: "t", MaxPayload: 64, Reliability: middleware.Reliable, Depth: 8, Transport: middleware.TransportShm}}
	}
	good := &agentproto.Schedule{OffsetsNs: []int64{0, 5, 5, 9}, Sizes: []int{8, 64, 10, 20}, PeriodNs: 10}
	s := start(good, 10)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if at, n := good.At(6); at != 15 || n != 10 {
		t.Fatalf("At(6) = %v, %d; want 15ns, 10", at, n)
	}
	for _, bad := range []struct {
		s    agentproto.Start
		want string
	}{
		{start(&agentproto.Schedule{OffsetsNs: []int64{0}, Sizes: []int{8, 9}}, 1), "as many offsets"},
		{start(&agentproto.Schedule{}, 1), "want 1..32768 sizes"},
		{start(&agentproto.Schedule{OffsetsNs: []int64{-1}, Sizes: []int{8}}, 1), "offsets_ns[0]: want ≥ 0"},
		{start(&agentproto.Schedule{OffsetsNs: []int64{0, 9, 3}, Sizes: []int{8, 8, 8}}, 3), "offsets_ns[2]: 3 is before"},
		{start(&agentproto.Schedule{OffsetsNs: []int64{0, 1}, Sizes: []int{8, 65}}, 2), "sizes[1]: want 8..contract.max_payload (64), got 65"},
		{start(&agentproto.Schedule{OffsetsNs: []int64{0, 1}, Sizes: []int{7, 8}}, 2), "sizes[0]"},
		{start(&agentproto.Schedule{OffsetsNs: []int64{0, 100}, Sizes: []int{8, 8}, PeriodNs: 50}, 3), "count 3 loops the plan"},
		{start(&agentproto.Schedule{OffsetsNs: []int64{0}, Sizes: []int{8}, PeriodNs: int64(30 * 24 * time.Hour)}, 3), "want each 0.."},
		{start(&agentproto.Schedule{OffsetsNs: []int64{0}, Sizes: []int{8}, PeriodNs: int64(time.Hour)}, 1<<60), "past the clock's range"},
		{func() agentproto.Start {
			s := start(good, 1)
			s.Role = agentproto.Subscriber
			return s
		}(), "only a publisher"},
	} {
		err := bad.s.Validate()
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: err = %v, want %q", bad.s.Schedule, err, bad.want)
		}
	}
}

// TestStampsValidate: Start.Stamps is a subscriber's, 0..MaxStamps.
func TestStampsValidate(t *testing.T) {
	c := middleware.Contract{Topic: "t", MaxPayload: 64, Reliability: middleware.Reliable, Depth: 8, Transport: middleware.TransportShm}
	ok := agentproto.Start{Endpoint: "s", Role: agentproto.Subscriber, Contract: c, Stamps: agentproto.MaxStamps}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []agentproto.Start{
		{Endpoint: "s", Role: agentproto.Subscriber, Contract: c, Stamps: agentproto.MaxStamps + 1},
		{Endpoint: "s", Role: agentproto.Subscriber, Contract: c, Stamps: -1},
		{Endpoint: "p", Role: agentproto.Publisher, Contract: c, Payload: 64, Count: 1, Stamps: 10},
	} {
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "start.stamps") {
			t.Errorf("%s with stamps %d: %v, want a start.stamps error", s.Role, s.Stamps, err)
		}
	}
}
