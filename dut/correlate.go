package dut

import (
	"slices"
	"sort"
	"time"

	"github.com/hilrig/hilrig/fixtures"
)

// Response is one response the rig observed on a DUT output.
type Response struct {
	// Mono is when the rig took the response, ns, CLOCK_MONOTONIC of the
	// controller (the clock of the stimulus stamps).
	Mono int64
	// Seq is the stimulus sequence number the response carries (echo;
	// 1-based), 0 when the correlation reads none (next).
	Seq uint64
}

// Tally is what correlating one run found. Every stimulus is answered
// (a latency sample) or missed; every response is a sample, a duplicate,
// late, or unknown.
type Tally struct {
	// Stimuli is the number of timed stimuli sent.
	Stimuli int64
	// Answered stimuli got a response within the deadline (one sample
	// each); Missed did not (none, or only late ones).
	Answered, Missed int64
	// Duplicates are further responses to an answered stimulus.
	Duplicates int64
	// OutOfOrder are answers (echo) that came after an answer to a later
	// stimulus; they are samples too.
	OutOfOrder int64
	// Late responses came after their stimulus's deadline.
	Late int64
	// Unknown responses name no stimulus of the run (echo: a sequence
	// number never sent; next: before the first stimulus).
	Unknown int64
	// Samples are the answered stimuli's latencies (response − stimulus),
	// ns, in stimulus order.
	Samples []int64
	// Worst is the stimulus (0-based) of the largest sample, or of the
	// first miss when there is no sample; -1 when there were no stimuli.
	Worst int
	// FirstMiss and LastMiss are the first and last missed stimulus
	// (0-based); -1: none.
	FirstMiss, LastMiss int
	// MissedAt are the missed stimuli (0-based), in order.
	MissedAt []int
}

// MissRate is Missed/Stimuli (0 without stimuli).
func (t Tally) MissRate() float64 {
	if t.Stimuli == 0 {
		return 0
	}
	return float64(t.Missed) / float64(t.Stimuli)
}

// Correlate matches responses to stimuli. stimuli are the send stamps
// of stimulus 1..n in order (ns, the clock of Response.Mono); responses
// are in the order observed. echo: a response names its stimulus by Seq;
// next: a response belongs to the latest stimulus sent at or before it.
// A response later than deadline after its stimulus is late, and the
// stimulus stays missed unless an answer in time exists. Pure; does not
// retain its arguments.
func Correlate(mode fixtures.CorrelationMode, stimuli []int64, responses []Response, deadline time.Duration) Tally {
	t := Tally{Stimuli: int64(len(stimuli)), Worst: -1, FirstMiss: -1, LastMiss: -1}
	lat := make([]int64, len(stimuli))
	answered := make([]bool, len(stimuli))
	highest := -1 // highest stimulus answered so far (echo)
	for _, r := range responses {
		var i int
		switch mode {
		case fixtures.CorrelateEcho:
			if r.Seq == 0 || r.Seq > uint64(len(stimuli)) {
				t.Unknown++
				continue
			}
			i = int(r.Seq - 1)
		default:
			// The latest stimulus at or before the response.
			i = sort.Search(len(stimuli), func(k int) bool { return stimuli[k] > r.Mono }) - 1
			if i < 0 {
				t.Unknown++
				continue
			}
		}
		d := r.Mono - stimuli[i]
		switch {
		case answered[i]:
			t.Duplicates++
		case d < 0:
			// An echo of a stimulus stamped after the response: only a
			// program that invents sequence numbers does that.
			t.Unknown++
		case d > int64(deadline):
			t.Late++
		default:
			answered[i], lat[i] = true, d
			if i < highest {
				t.OutOfOrder++
			}
			highest = max(highest, i)
		}
	}
	for i, ok := range answered {
		if !ok {
			t.Missed++
			if t.FirstMiss < 0 {
				t.FirstMiss = i
			}
			t.LastMiss = i
			t.MissedAt = append(t.MissedAt, i)
			continue
		}
		t.Answered++
		t.Samples = append(t.Samples, lat[i])
		if t.Worst < 0 || lat[i] > lat[t.Worst] {
			t.Worst = i
		}
	}
	if t.Worst < 0 {
		t.Worst = t.FirstMiss
	}
	return t
}

// PairEdges is the ground truth of a GPIO-wired DUT: stimulus edge k
// paired with the first response edge after it and before stimulus edge
// k+1 (next). stim and resp are edge timestamps, ns, one clock, each in
// order. It returns the delays, ns, of the paired stimuli, in order.
func PairEdges(stim, resp []int64) []int64 {
	out := make([]int64, 0, len(stim))
	j := 0
	for k, s := range stim {
		for j < len(resp) && resp[j] < s {
			j++
		}
		if j == len(resp) {
			break
		}
		if k+1 < len(stim) && resp[j] >= stim[k+1] {
			continue // no response before the next stimulus: a miss
		}
		out = append(out, resp[j]-s)
		j++
	}
	return out
}

// median of xs (ns); 0 when empty. Sorts a copy.
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
