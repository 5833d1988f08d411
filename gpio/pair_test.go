package gpio_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hilrig/hilrig/gpio"
)

// edges builds a line's capture: times in µs, line seqnos given (0 = none).
func edges(line int, us []int64, seq []uint64) []gpio.Edge {
	out := make([]gpio.Edge, len(us))
	for i, t := range us {
		out[i] = gpio.Edge{Line: line, TimestampNs: t * 1000, Rising: i%2 == 0}
		if seq != nil {
			// Directions follow the line's own count, so a seqno gap
			// keeps them consistent with the edges that were lost.
			out[i].LineSeqno = seq[i]
			out[i].Rising = seq[i]%2 == 1
		}
	}
	return out
}

func TestPairEdges(t *testing.T) {
	opts := gpio.PairOptions{MaxDelay: 300 * time.Microsecond}
	tests := []struct {
		name           string
		s, r           []gpio.Edge
		wantPairs      []uint64 // sender indices paired
		wantDelaysUs   []int64
		wantUnmatched  []string // "s@T" / "r@T" in µs
		reason         string   // substring of the first unmatched reason
		sDrop, rDrop   uint64
		sMerge, rMerge uint64
		wantResyncs    int
	}{
		{name: "all matched",
			s: edges(0, []int64{0, 1000, 2000}, []uint64{1, 2, 3}), r: edges(1, []int64{100, 1150, 2120}, []uint64{1, 2, 3}),
			wantPairs: []uint64{1, 2, 3}, wantDelaysUs: []int64{100, 150, 120}},
		{name: "receiver edge missing (message lost)",
			s: edges(0, []int64{0, 1000, 2000, 3000}, []uint64{1, 2, 3, 4}), r: edges(1, []int64{100, 2100, 3100}, []uint64{1, 2, 3}),
			wantPairs: []uint64{1, 3, 4}, wantDelaysUs: []int64{100, 100, 100}, wantUnmatched: []string{"s@1000"},
			reason: "no receiver edge within 300µs", wantResyncs: 1},
		{name: "extra receiver edge (spurious)",
			s: edges(0, []int64{0, 1000, 2000}, []uint64{1, 2, 3}), r: edges(1, []int64{100, 600, 1100, 2100}, []uint64{1, 2, 3, 4}),
			wantPairs: []uint64{1, 2, 3}, wantDelaysUs: []int64{100, 100, 100}, wantUnmatched: []string{"r@600"},
			reason: "spurious edge", wantResyncs: 1},
		{name: "sender edge lost in capture",
			s: edges(0, []int64{0, 2000}, []uint64{1, 3}), r: edges(1, []int64{100, 1100, 2100}, []uint64{1, 2, 3}),
			wantPairs: []uint64{1, 3}, wantDelaysUs: []int64{100, 100}, wantUnmatched: []string{"r@1100"},
			reason: "lost in capture", sDrop: 1},
		{name: "receiver edges merged without a seqno gap",
			// Two receiver edges folded into one event: seqnos run on but
			// the direction repeats (rising, rising).
			s: edges(0, []int64{0, 1000, 2000, 3000}, []uint64{1, 2, 3, 4}),
			r: func() []gpio.Edge {
				r := edges(1, []int64{100, 2100, 3100}, []uint64{1, 2, 3})
				r[1].Rising, r[2].Rising = true, false
				return r
			}(),
			wantPairs: []uint64{1, 3, 4}, wantDelaysUs: []int64{100, 100, 100}, wantUnmatched: []string{"s@1000"},
			reason: "lost in capture", rMerge: 1, wantResyncs: 1},
		{name: "trailing edges",
			s: edges(0, []int64{0, 1000, 2000}, nil), r: edges(1, []int64{100}, nil),
			wantPairs: []uint64{1}, wantDelaysUs: []int64{100}, wantUnmatched: []string{"s@1000", "s@2000"},
			reason: "no receiver edge"},
		{name: "empty receiver", s: edges(0, []int64{0}, nil), r: nil,
			wantUnmatched: []string{"s@0"}, reason: "no receiver edge after it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := gpio.PairEdges(tc.s, tc.r, opts)
			if err != nil {
				t.Fatal(err)
			}
			var idx []uint64
			var del []int64
			for _, p := range res.Pairs {
				idx = append(idx, p.Index)
				del = append(del, p.DelayNs/1000)
			}
			if !slices.Equal(idx, tc.wantPairs) || !slices.Equal(del, tc.wantDelaysUs) {
				t.Fatalf("pairs %v delays %vµs, want %v %vµs", idx, del, tc.wantPairs, tc.wantDelaysUs)
			}
			var um []string
			for _, u := range res.Unmatched {
				side := "r"
				if u.Sender {
					side = "s"
				}
				um = append(um, side+"@"+itoa(u.Edge.TimestampNs/1000))
			}
			if strings.Join(um, ",") != strings.Join(tc.wantUnmatched, ",") {
				t.Fatalf("unmatched %v, want %v", um, tc.wantUnmatched)
			}
			if tc.reason != "" && !strings.Contains(res.Unmatched[0].Reason, tc.reason) {
				t.Fatalf("reason %q lacks %q", res.Unmatched[0].Reason, tc.reason)
			}
			if res.SenderDropped != tc.sDrop || res.ReceiverDropped != tc.rDrop || res.Resyncs != tc.wantResyncs {
				t.Fatalf("dropped %d/%d resyncs %d, want %d/%d %d", res.SenderDropped, res.ReceiverDropped, res.Resyncs, tc.sDrop, tc.rDrop, tc.wantResyncs)
			}
			if res.SenderMerged != tc.sMerge || res.ReceiverMerged != tc.rMerge {
				t.Fatalf("merged %d/%d, want %d/%d", res.SenderMerged, res.ReceiverMerged, tc.sMerge, tc.rMerge)
			}
		})
	}
}

func TestPairEdgesRejects(t *testing.T) {
	if _, err := gpio.PairEdges(nil, nil, gpio.PairOptions{}); !errors.Is(err, gpio.ErrInvalidSpec) {
		t.Fatalf("zero window: %v", err)
	}
	back := edges(0, []int64{10, 5}, nil)
	if _, err := gpio.PairEdges(back, nil, gpio.PairOptions{MaxDelay: time.Millisecond}); !errors.Is(err, gpio.ErrInvalidSpec) || !strings.Contains(err.Error(), "back in time") {
		t.Fatalf("unordered: %v", err)
	}
}

func TestSplitLines(t *testing.T) {
	mixed := []gpio.Edge{{Line: 1, TimestampNs: 1}, {Line: 2, TimestampNs: 2}, {Line: 9}, {Line: 1, TimestampNs: 3}}
	s, r := gpio.SplitLines(mixed, 1, 2)
	if len(s) != 2 || len(r) != 1 || s[1].TimestampNs != 3 {
		t.Fatalf("split %v / %v", s, r)
	}
}

func itoa(v int64) string {
	return strconv.FormatInt(v, 10)
}
