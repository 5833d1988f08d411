package dut_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hilrig/hilrig/dut"
	"github.com/hilrig/hilrig/fixtures"
)

func TestCorrelateEcho(t *testing.T) {
	stim := []int64{1000, 2000, 3000, 4000, 5000}
	resp := []dut.Response{
		{Mono: 1100, Seq: 1},
		{Mono: 1150, Seq: 1}, // duplicate
		{Mono: 3200, Seq: 3},
		{Mono: 3300, Seq: 2}, // out of order, in time (1300 ≤ 1500)
		{Mono: 9000, Seq: 4}, // late
		{Mono: 9100, Seq: 77},
		{Mono: 9200, Seq: 0},
	}
	got := dut.Correlate(fixtures.CorrelateEcho, stim, resp, 1500*time.Nanosecond)
	want := dut.Tally{Stimuli: 5, Answered: 3, Missed: 2, Duplicates: 1, OutOfOrder: 1, Late: 1, Unknown: 2, Samples: []int64{100, 1300, 200}, Worst: 1, FirstMiss: 3, LastMiss: 4, MissedAt: []int{3, 4}}
	if !equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if r := got.MissRate(); r != 0.4 {
		t.Errorf("miss rate %g, want 0.4", r)
	}
}

func TestCorrelateNext(t *testing.T) {
	stim := []int64{1000, 2000, 3000, 4000}
	resp := []dut.Response{
		{Mono: 500},  // before any stimulus
		{Mono: 1200}, // answers 1
		{Mono: 1300}, // duplicate of 1
		{Mono: 2900}, // late for 2 (deadline 500)
		{Mono: 3000}, // answers 3 at once (0 ns)
		{Mono: 4400}, // answers 4
	}
	got := dut.Correlate(fixtures.CorrelateNext, stim, resp, 500*time.Nanosecond)
	want := dut.Tally{Stimuli: 4, Answered: 3, Missed: 1, Duplicates: 1, Late: 1, Unknown: 1, Samples: []int64{200, 0, 400}, Worst: 3, FirstMiss: 1, LastMiss: 1, MissedAt: []int{1}}
	if !equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestCorrelateNothing(t *testing.T) {
	got := dut.Correlate(fixtures.CorrelateNext, nil, []dut.Response{{Mono: 5}}, time.Second)
	if got.Stimuli != 0 || got.Unknown != 1 || got.Worst != -1 || got.MissRate() != 0 {
		t.Errorf("no stimuli: %+v", got)
	}
	got = dut.Correlate(fixtures.CorrelateEcho, []int64{10, 20}, nil, time.Second)
	if got.Missed != 2 || got.Worst != 0 || got.FirstMiss != 0 || got.LastMiss != 1 || len(got.Samples) != 0 {
		t.Errorf("no responses: %+v", got)
	}
}

func TestPairEdges(t *testing.T) {
	stim := []int64{100, 200, 300, 400}
	// 300's answer never came; 400's came twice (the second is ignored).
	resp := []int64{50, 130, 260, 420, 430}
	if got, want := dut.PairEdges(stim, resp), []int64{30, 60, 20}; !slices.Equal(got, want) {
		t.Errorf("PairEdges = %v, want %v", got, want)
	}
}

func equal(a, b dut.Tally) bool {
	return reflect.DeepEqual(a, b)
}
