package agentproto

import (
	"math"
	"time"
)

// MaxScheduleLen bounds a Schedule's entries: at about 20 bytes of JSON
// each, a start request stays well under MaxLine.
const MaxScheduleLen = 32768

// Schedule is a publisher's send plan, replayed from a recording: message
// i (counted from 0, warm-up included) is entry k = i mod len(Sizes),
// sent (i div len(Sizes))·PeriodNs + OffsetsNs[k] after the publisher
// starts sending and carrying Sizes[k] bytes. Start.Count bounds the messages: more
// than len(Sizes) loops the plan. Times on the publisher's
// CLOCK_MONOTONIC (Go's time.Time).
type Schedule struct {
	// OffsetsNs are the send times after the publisher's start,
	// non-decreasing from ≥ 0 (a channel's phase in its recording: its
	// first message need not be at 0).
	OffsetsNs []int64 `json:"offsets_ns"`
	// Sizes are the payload sizes in bytes, each 8..contract.max_payload.
	Sizes []int `json:"sizes"`
	// PeriodNs is one pass of the plan (≥ its last offset); needed only
	// when Count loops it.
	PeriodNs int64 `json:"period_ns,omitempty"`
}

// At returns when message i is due after the publisher's start and its
// size.
// i may be any value; the caller's Start was validated.
func (s *Schedule) At(i uint64) (time.Duration, int) {
	n := uint64(len(s.Sizes))
	k := i % n
	return time.Duration(int64(i/n)*s.PeriodNs + s.OffsetsNs[k]), s.Sizes[k]
}

func (s *Start) validateSchedule() error {
	p := s.Schedule
	if p == nil {
		return nil
	}
	bad := invalidFor(s.Endpoint)
	if s.Role != Publisher {
		return bad("start.schedule: only a publisher has one, not a %s", s.Role)
	}
	n := len(p.Sizes)
	if n == 0 || n > MaxScheduleLen || len(p.OffsetsNs) != n {
		return bad("start.schedule: want 1..%d sizes and as many offsets, got %d sizes, %d offsets", MaxScheduleLen, n, len(p.OffsetsNs))
	}
	// A week bounds every time, so At's arithmetic cannot overflow.
	const week = int64(7 * 24 * time.Hour)
	if p.PeriodNs < 0 || p.PeriodNs > week || p.OffsetsNs[n-1] > week {
		return bad("start.schedule: period %d ns, last offset %d ns: want each 0..%d", p.PeriodNs, p.OffsetsNs[n-1], week)
	}
	if p.OffsetsNs[0] < 0 {
		return bad("start.schedule.offsets_ns[0]: want ≥ 0, got %d", p.OffsetsNs[0])
	}
	for i := range n {
		if i > 0 && p.OffsetsNs[i] < p.OffsetsNs[i-1] {
			return bad("start.schedule.offsets_ns[%d]: %d is before the previous %d", i, p.OffsetsNs[i], p.OffsetsNs[i-1])
		}
		if p.Sizes[i] < 8 || p.Sizes[i] > s.Contract.MaxPayload {
			return bad("start.schedule.sizes[%d]: want 8..contract.max_payload (%d), got %d", i, s.Contract.MaxPayload, p.Sizes[i])
		}
	}
	if s.Count > uint64(n) && s.Count/uint64(n) > uint64(math.MaxInt64/max(p.PeriodNs, 1)) {
		return bad("start.schedule: count %d loops the plan past the clock's range", s.Count)
	}
	if s.Count > uint64(n) && p.PeriodNs < max(p.OffsetsNs[n-1], 1) {
		return bad("start.schedule.period_ns %d: count %d loops the plan, want a period ≥ its last offset (%d ns) and > 0", p.PeriodNs, s.Count, p.OffsetsNs[n-1])
	}
	if s.Count == 0 && s.DurationNs > 0 && p.PeriodNs < max(p.OffsetsNs[n-1], 1) {
		return bad("start.schedule.period_ns %d: a publisher bounded by duration loops the plan, want a period ≥ its last offset (%d ns) and > 0", p.PeriodNs, p.OffsetsNs[n-1])
	}
	return nil
}
